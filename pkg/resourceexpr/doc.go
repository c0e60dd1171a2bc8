// Package resourceexpr parses and evaluates the resource expressions of a SidecarSet
// resourcesPolicy (OpenKruise's "calculator"), for example
//
//	max(cpu*50%, 50m)
//	0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)
//	max(memory*50%, 100Mi)
//
// # Syntax
//
//	expr   = term { ("+" | "-") term }
//	term   = factor { ("*" | "/") factor }
//	factor = number | quantity | variable | call | "(" expr ")" | "-" factor
//	call   = ("max" | "min") "(" expr "," expr ")"
//
// Numbers are decimal, optionally fractional and in scientific notation (1.5, 1e3, 2E-1); a
// trailing "%" divides by 100 (50% = 0.5). A number followed by one of the suffixes m k M G T P Ki
// Mi Gi Ti Pi is a Kubernetes quantity (100m, 512Mi). Variables and function names are ASCII
// identifiers and case-insensitive. Whitespace is ignored. Parentheses nest at most MaxDepth deep.
//
// # Values and operators
//
// A value is either a plain number (float64) or a quantity (resource.Quantity). The rules are
// OpenKruise's:
//   - a + b, a - b: if either operand is a quantity both become quantities (a number n becomes
//     n*1000 milli-units, truncated: n cores for cpu) and the quantities are added;
//   - quantity * number and quantity / number scale the milli-value and truncate it to an integer;
//     quantity * quantity, anything / quantity and division by zero are errors;
//   - max(a, b), min(a, b): compare as quantities when either is a quantity (the number is
//     converted as for +), return the chosen operand (the left one on ties);
//   - unary minus negates; intermediate values may be negative;
//   - the final value must not be negative.
//
// # Evaluation
//
// Expr.Eval binds exactly one variable, the name of the resource being computed ("cpu" or
// "memory"), to a quantity. A plain-number result is converted to a quantity for that resource:
// for cpu it is a number of cores (truncated to millicores), otherwise a number of base units
// (bytes for memory). Expr.Check performs, without a value, the checks that can be done when the
// variable is known to be a quantity: only that variable is referenced, no quantity is multiplied
// by a quantity or used as a divisor, no divisor is a constant zero, and an expression without a
// variable evaluates to a non-negative value. Evaluation never panics: values that do not fit in
// an int64 number of milli-units are errors.
//
// Differences from OpenKruise's calculator, all stricter: malformed numbers (5x, 2e, 1e999) are
// errors instead of silently reading as 0, unknown functions and wrong arities are parse errors,
// non-ASCII input is rejected, and out-of-range values are errors instead of wrapping.
package resourceexpr
