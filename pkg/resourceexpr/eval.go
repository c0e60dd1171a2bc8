package resourceexpr

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// CPU is the variable, and resource, whose plain-number results are cores.
const CPU = "cpu"

// Memory is the variable, and resource, whose plain-number results are bytes.
const Memory = "memory"

// maxMilli bounds every milli-value handled as an int64.
const maxMilli = 9.2e18

var errOutOfRange = errors.New("value out of range")

// value is a plain number or a quantity.
type value struct {
	isQty bool
	num   float64
	qty   resource.Quantity
}

func (v value) String() string {
	if v.isQty {
		return v.qty.String()
	}
	return fmt.Sprintf("%g", v.num)
}

// Eval evaluates the expression with variable (case-insensitive; normally CPU or Memory) bound to
// val and returns a non-negative quantity. A plain-number result is converted for the resource
// named by variable: cores truncated to millicores for CPU, base units (bytes) otherwise.
// Referencing any other variable is an error.
func (e *Expr) Eval(variable string, val resource.Quantity) (resource.Quantity, error) {
	variable = strings.ToLower(variable)
	ev := evaluator{variable: variable, val: value{isQty: true, qty: val}}
	v, err := ev.eval(e.root)
	if err != nil {
		return resource.Quantity{}, err
	}
	if v.isQty {
		if v.qty.Sign() < 0 {
			return resource.Quantity{}, fmt.Errorf("calculation result is negative: %s", v)
		}
		return v.qty, nil
	}
	if v.num < 0 {
		return resource.Quantity{}, fmt.Errorf("calculation result is negative: %s", v)
	}
	if variable == CPU {
		return numberToQuantity(v.num)
	}
	if v.num >= maxMilli/1000 || math.IsNaN(v.num) {
		return resource.Quantity{}, errOutOfRange
	}
	return *resource.NewQuantity(int64(v.num), resource.DecimalSI), nil
}

// evaluator evaluates a tree with one bound variable.
type evaluator struct {
	variable string
	val      value
}

func (ev evaluator) eval(n node) (value, error) {
	switch n := n.(type) {
	case numNode:
		return value{num: n.v}, nil
	case qtyNode:
		return value{isQty: true, qty: n.q.DeepCopy()}, nil
	case varNode:
		if n.name != ev.variable {
			return value{}, fmt.Errorf("undefined variable: %s", n.name)
		}
		return value{isQty: true, qty: ev.val.qty.DeepCopy()}, nil
	case negNode:
		x, err := ev.eval(n.x)
		if err != nil {
			return value{}, err
		}
		return negate(x), nil
	case binNode:
		l, err := ev.eval(n.l)
		if err != nil {
			return value{}, err
		}
		r, err := ev.eval(n.r)
		if err != nil {
			return value{}, err
		}
		return binary(n.op, l, r)
	case callNode:
		a, err := ev.eval(n.a)
		if err != nil {
			return value{}, err
		}
		b, err := ev.eval(n.b)
		if err != nil {
			return value{}, err
		}
		return extremum(n.fn == "max", a, b)
	}
	return value{}, fmt.Errorf("unknown node %T", n)
}

func negate(x value) value {
	if x.isQty {
		q := x.qty.DeepCopy()
		q.Neg()
		return value{isQty: true, qty: q}
	}
	return value{num: -x.num}
}

func binary(op byte, l, r value) (value, error) {
	switch op {
	case '+', '-':
		return addSub(op == '-', l, r)
	case '*':
		return mul(l, r)
	default:
		return div(l, r)
	}
}

// addSub adds or subtracts; a quantity operand makes both quantities.
func addSub(sub bool, l, r value) (value, error) {
	if !l.isQty && !r.isQty {
		if sub {
			return number(l.num - r.num)
		}
		return number(l.num + r.num)
	}
	lq, err := toQuantity(l)
	if err != nil {
		return value{}, err
	}
	rq, err := toQuantity(r)
	if err != nil {
		return value{}, err
	}
	if sub {
		lq.Sub(rq)
	} else {
		lq.Add(rq)
	}
	return value{isQty: true, qty: lq}, nil
}

func mul(l, r value) (value, error) {
	switch {
	case l.isQty && r.isQty:
		return value{}, errors.New("multiplication of two quantities")
	case l.isQty:
		return scale(l.qty, r.num, false)
	case r.isQty:
		return scale(r.qty, l.num, false)
	}
	return number(l.num * r.num)
}

func div(l, r value) (value, error) {
	switch {
	case r.isQty:
		return value{}, errors.New("division by quantity")
	case r.num == 0:
		return value{}, errors.New("division by zero")
	case l.isQty:
		return scale(l.qty, r.num, true)
	}
	return number(l.num / r.num)
}

// scale multiplies (or divides) the milli-value of q by f and truncates it, keeping q's format.
func scale(q resource.Quantity, f float64, divide bool) (value, error) {
	milli, err := milliValue(q)
	if err != nil {
		return value{}, err
	}
	m := float64(milli) * f
	if divide {
		m = float64(milli) / f
	}
	if math.IsNaN(m) || math.Abs(m) >= maxMilli {
		return value{}, errOutOfRange
	}
	out := q.DeepCopy()
	out.SetMilli(int64(m))
	return value{isQty: true, qty: out}, nil
}

// extremum returns the larger (or smaller) operand, comparing as quantities when either is one;
// the left operand wins ties.
func extremum(isMax bool, a, b value) (value, error) {
	if !a.isQty && !b.isQty {
		if (isMax && a.num >= b.num) || (!isMax && a.num <= b.num) {
			return a, nil
		}
		return b, nil
	}
	aq, err := toQuantity(a)
	if err != nil {
		return value{}, err
	}
	bq, err := toQuantity(b)
	if err != nil {
		return value{}, err
	}
	c := aq.Cmp(bq)
	if (isMax && c >= 0) || (!isMax && c <= 0) {
		return value{isQty: true, qty: aq}, nil
	}
	return value{isQty: true, qty: bq}, nil
}

func number(f float64) (value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return value{}, errOutOfRange
	}
	return value{num: f}, nil
}

// toQuantity returns a quantity unchanged and a number n as n*1000 milli-units (truncated).
func toQuantity(v value) (resource.Quantity, error) {
	if v.isQty {
		return v.qty.DeepCopy(), nil
	}
	return numberToQuantity(v.num)
}

func numberToQuantity(n float64) (resource.Quantity, error) {
	m := n * 1000
	if math.IsNaN(m) || math.Abs(m) >= maxMilli {
		return resource.Quantity{}, errOutOfRange
	}
	return *resource.NewMilliQuantity(int64(m), resource.DecimalSI), nil
}

// milliValue returns q in milli-units, failing instead of overflowing.
func milliValue(q resource.Quantity) (int64, error) {
	if math.Abs(q.AsApproximateFloat64()) >= maxMilli/1000 {
		return 0, errOutOfRange
	}
	return q.MilliValue(), nil
}
