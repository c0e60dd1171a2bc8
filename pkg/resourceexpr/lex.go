package resourceexpr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokNumber
	tokQuantity
	tokIdent
	tokOp // one of + - * / ( ) ,
)

// token is a lexical token; pos is its 1-based byte column.
type token struct {
	kind tokenKind
	pos  int
	text string
	num  float64
	qty  resource.Quantity
}

// quantityUnits are the suffixes that make a number a quantity. E and Ei are not supported:
// "E" reads as an exponent.
var quantityUnits = map[string]bool{
	"m": true, "k": true, "M": true, "G": true, "T": true, "P": true,
	"Ki": true, "Mi": true, "Gi": true, "Ti": true, "Pi": true,
}

// lexer splits an expression into tokens.
type lexer struct {
	in  string
	pos int
}

func (l *lexer) next() (token, error) {
	for l.pos < len(l.in) && isSpace(l.in[l.pos]) {
		l.pos++
	}
	if l.pos >= len(l.in) {
		return token{kind: tokEOF, pos: l.pos + 1}, nil
	}
	start := l.pos
	c := l.in[l.pos]
	switch {
	case strings.IndexByte("+-*/(),", c) >= 0:
		l.pos++
		return token{kind: tokOp, pos: start + 1, text: string(c)}, nil
	case isDigit(c) || c == '.':
		return l.number()
	case isLetter(c):
		for l.pos < len(l.in) && (isLetter(l.in[l.pos]) || isDigit(l.in[l.pos]) || l.in[l.pos] == '_') {
			l.pos++
		}
		return token{kind: tokIdent, pos: start + 1, text: l.in[start:l.pos]}, nil
	default:
		return token{}, fmt.Errorf("unexpected character %q at col %d", c, start+1)
	}
}

// number scans digits, one dot, an exponent with optional sign, an optional percent sign and an
// optional unit suffix, like OpenKruise's lexer, then classifies the text strictly.
func (l *lexer) number() (token, error) {
	start := l.pos
	var seenDot, seenE, seenPercent, wantExpDigit bool
scan:
	for l.pos < len(l.in) {
		c := l.in[l.pos]
		switch {
		case isDigit(c):
			wantExpDigit = false
		case c == '.' && !seenDot && !seenE && !seenPercent:
			seenDot = true
		case (c == 'e' || c == 'E') && !seenE && !seenPercent:
			seenE, wantExpDigit = true, true
		case (c == '+' || c == '-') && wantExpDigit:
			wantExpDigit = false
		case c == '%' && !seenPercent:
			seenPercent = true
		case isLetter(c) && !wantExpDigit:
			for l.pos < len(l.in) && isLetter(l.in[l.pos]) {
				l.pos++
			}
			break scan
		default:
			break scan
		}
		l.pos++
	}
	return classifyNumber(l.in[start:l.pos], start+1)
}

// classifyNumber turns the text of a number into a number or quantity token.
func classifyNumber(text string, pos int) (token, error) {
	numEnd := strings.IndexFunc(text, func(r rune) bool {
		return !(isDigit(byte(r)) || strings.ContainsRune(".eE+-", r))
	})
	if numEnd < 0 {
		numEnd = len(text)
	}
	num, suffix := text[:numEnd], text[numEnd:]
	switch {
	case suffix == "" || suffix == "%":
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return token{}, fmt.Errorf("number %q at col %d is out of range", text, pos)
			}
			return token{}, fmt.Errorf("invalid number %q at col %d", text, pos)
		}
		if suffix == "%" {
			f /= 100
		}
		return token{kind: tokNumber, pos: pos, text: text, num: f}, nil
	case quantityUnits[suffix]:
		q, err := resource.ParseQuantity(text)
		if err != nil {
			return token{}, fmt.Errorf("invalid quantity %q at col %d: %v", text, pos, err)
		}
		return token{kind: tokQuantity, pos: pos, text: text, qty: q}, nil
	default:
		return token{}, fmt.Errorf("invalid number %q at col %d", text, pos)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
