package resourceexpr

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Check reports the errors Eval would return for every value of variable (case-insensitive),
// knowing that Eval binds it to a quantity: a reference to another variable, a quantity multiplied
// by a quantity, a quantity divisor, a constant zero divisor, and, for an expression that does not
// reference the variable, any evaluation error including a negative result. Expressions whose
// result depends on the value (cpu - 2) may still fail in Eval.
func (e *Expr) Check(variable string) error {
	variable = strings.ToLower(variable)
	k, err := checker{variable: variable}.kind(e.root)
	if err != nil {
		return err
	}
	if k.constant {
		_, err := e.Eval(variable, resource.Quantity{})
		return err
	}
	return nil
}

// kind is the static type of a subtree: quantity or number, and whether it references no variable.
type kind struct {
	qty      bool
	constant bool
}

type checker struct {
	variable string
}

func (c checker) kind(n node) (kind, error) {
	switch n := n.(type) {
	case numNode:
		return kind{constant: true}, nil
	case qtyNode:
		return kind{qty: true, constant: true}, nil
	case varNode:
		if n.name != c.variable {
			return kind{}, fmt.Errorf("undefined variable: %s", n.name)
		}
		return kind{qty: true}, nil
	case negNode:
		return c.kind(n.x)
	case binNode:
		return c.binary(n)
	case callNode:
		a, err := c.kind(n.a)
		if err != nil {
			return kind{}, err
		}
		b, err := c.kind(n.b)
		if err != nil {
			return kind{}, err
		}
		return kind{qty: a.qty || b.qty, constant: a.constant && b.constant}, nil
	}
	return kind{}, fmt.Errorf("unknown node %T", n)
}

func (c checker) binary(n binNode) (kind, error) {
	l, err := c.kind(n.l)
	if err != nil {
		return kind{}, err
	}
	r, err := c.kind(n.r)
	if err != nil {
		return kind{}, err
	}
	out := kind{qty: l.qty || r.qty, constant: l.constant && r.constant}
	switch n.op {
	case '*':
		if l.qty && r.qty {
			return kind{}, errors.New("multiplication of two quantities")
		}
	case '/':
		if r.qty {
			return kind{}, errors.New("division by quantity")
		}
		if r.constant {
			v, err := evaluator{}.eval(n.r)
			if err != nil {
				return kind{}, err
			}
			if v.num == 0 {
				return kind{}, errors.New("division by zero")
			}
		}
		out.qty = l.qty
	}
	return out, nil
}
