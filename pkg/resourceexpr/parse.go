package resourceexpr

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxDepth is the deepest nesting of parentheses, unary minus and function calls Parse accepts.
const MaxDepth = 64

// Expr is a parsed resource expression. It is immutable and safe for concurrent use.
type Expr struct {
	src  string
	root node
}

// node is an expression tree node: one of the types below.
type node interface{}

// numNode is a number literal; percentages are already divided by 100.
type numNode struct{ v float64 }

// qtyNode is a quantity literal.
type qtyNode struct{ q resource.Quantity }

// varNode is a variable reference; name is lower case.
type varNode struct{ name string }

// negNode is a unary minus.
type negNode struct{ x node }

// binNode is l op r, op one of + - * /.
type binNode struct {
	op   byte
	l, r node
}

// callNode is fn(a, b), fn "max" or "min".
type callNode struct {
	fn   string
	a, b node
}

// Parse parses an expression. It fails on syntax errors, malformed numbers or quantities, unknown
// functions, calls without exactly two arguments and nesting deeper than MaxDepth. Variables are
// not checked: see Expr.Check.
func Parse(expr string) (*Expr, error) {
	p := &parser{lex: lexer{in: expr}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, errors.New("empty expression")
	}
	root, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected()
	}
	return &Expr{src: expr, root: root}, nil
}

// String returns the source of the expression.
func (e *Expr) String() string { return e.src }

// Variables returns the lower-cased names of the variables the expression references, sorted.
func (e *Expr) Variables() []string {
	seen := map[string]bool{}
	walk(e.root, func(n node) {
		if v, ok := n.(varNode); ok {
			seen[v.name] = true
		}
	})
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func walk(n node, fn func(node)) {
	fn(n)
	switch n := n.(type) {
	case negNode:
		walk(n.x, fn)
	case binNode:
		walk(n.l, fn)
		walk(n.r, fn)
	case callNode:
		walk(n.a, fn)
		walk(n.b, fn)
	}
}

type parser struct {
	lex lexer
	tok token
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	p.tok = t
	return err
}

func (p *parser) isOp(ops string) bool {
	return p.tok.kind == tokOp && strings.Contains(ops, p.tok.text)
}

func (p *parser) unexpected() error {
	if p.tok.kind == tokEOF {
		return fmt.Errorf("syntax error: unexpected end of expression")
	}
	return fmt.Errorf("syntax error: unexpected %q at col %d", p.tok.text, p.tok.pos)
}

// expr parses term { ("+" | "-") term }.
func (p *parser) expr(depth int) (node, error) {
	return p.binary(depth, "+-", p.term)
}

// term parses factor { ("*" | "/") factor }.
func (p *parser) term(depth int) (node, error) {
	return p.binary(depth, "*/", p.factor)
}

// binary parses a left-associative chain of operands joined by ops.
func (p *parser) binary(depth int, ops string, operand func(int) (node, error)) (node, error) {
	left, err := operand(depth)
	if err != nil {
		return nil, err
	}
	for p.isOp(ops) {
		op := p.tok.text[0]
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := operand(depth)
		if err != nil {
			return nil, err
		}
		left = binNode{op: op, l: left, r: right}
	}
	return left, nil
}

// factor parses a number, quantity, variable, call, parenthesized expression or negation.
func (p *parser) factor(depth int) (node, error) {
	if depth >= MaxDepth {
		return nil, fmt.Errorf("expression nested deeper than %d at col %d", MaxDepth, p.tok.pos)
	}
	t := p.tok
	switch {
	case t.kind == tokNumber:
		return numNode{v: t.num}, p.advance()
	case t.kind == tokQuantity:
		return qtyNode{q: t.qty}, p.advance()
	case t.kind == tokIdent:
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.isOp("(") {
			return p.call(t, depth+1)
		}
		return varNode{name: strings.ToLower(t.text)}, nil
	case p.isOp("("):
		if err := p.advance(); err != nil {
			return nil, err
		}
		inner, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		return inner, p.expect(")")
	case p.isOp("-"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.factor(depth + 1)
		if err != nil {
			return nil, err
		}
		return negNode{x: x}, nil
	}
	return nil, p.unexpected()
}

// call parses the argument list of fn; the current token is "(".
func (p *parser) call(fn token, depth int) (node, error) {
	name := strings.ToLower(fn.text)
	if name != "max" && name != "min" {
		return nil, fmt.Errorf("unknown function %s at col %d", fn.text, fn.pos)
	}
	var args []node
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		arg, err := p.expr(depth)
		if err != nil {
			return nil, err
		}
		args = append(args, arg)
		if !p.isOp(",") {
			break
		}
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if len(args) != 2 {
		return nil, fmt.Errorf("%s function requires exactly 2 arguments, got %d", name, len(args))
	}
	return callNode{fn: name, a: args[0], b: args[1]}, nil
}

func (p *parser) expect(op string) error {
	if !p.isOp(op) {
		return p.unexpected()
	}
	return p.advance()
}
