package resourceexpr

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		expr    string
		wantErr string // substring; "" means no error
	}{
		{expr: "cpu*50%"},
		{expr: "max( cpu * 0.5 , 50m )"},
		{expr: "0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)"},
		{expr: "MAX(CPU, 1)"},
		{expr: "1e3 + 1.5E-2 + .5 + 5."},
		{expr: "- -cpu"},
		{expr: "invalidvar * 50%"}, // variables are checked by Check
		{expr: "", wantErr: "empty expression"},
		{expr: "   ", wantErr: "empty expression"},
		{expr: "invalid expression @#$", wantErr: "syntax error"},
		{expr: "cpu +*/ 50%", wantErr: "syntax error"},
		{expr: "max(cpu*50%, 50m", wantErr: "unexpected end"},
		{expr: "max(cpu*50%)", wantErr: "exactly 2 arguments, got 1"},
		{expr: "min(1, 2, 3)", wantErr: "exactly 2 arguments, got 3"},
		{expr: "unknown(1, 2)", wantErr: "unknown function unknown"},
		{expr: "()", wantErr: "syntax error"},
		{expr: "2 + @", wantErr: "unexpected character"},
		{expr: "5..5", wantErr: "syntax error"},
		{expr: "5%%", wantErr: "unexpected character"},
		{expr: "5x", wantErr: `invalid number "5x"`},
		{expr: "2e", wantErr: `invalid number "2e"`},
		{expr: "50%m", wantErr: `invalid number "50%m"`},
		{expr: "1e3Mi", wantErr: "invalid quantity"},
		{expr: "1e999", wantErr: "out of range"},
		{expr: "+5", wantErr: "syntax error"},
		{expr: "cpu€", wantErr: "unexpected character"},
		{expr: strings.Repeat("(", MaxDepth+1) + "1" + strings.Repeat(")", MaxDepth+1), wantErr: "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := Parse(tt.expr)
			if got := errString(err); !contains(got, tt.wantErr) {
				t.Errorf("Parse(%q) error = %q, want it to contain %q", tt.expr, got, tt.wantErr)
			}
		})
	}
}

// The cases of OpenKruise's calculator tests, evaluated with the cpu variable (results that are
// plain numbers become cores).
func TestEval(t *testing.T) {
	tests := []struct {
		expr     string
		variable string
		value    string
		want     string
		wantErr  string
	}{
		{expr: "2 + 3", variable: CPU, want: "5"},
		{expr: "10 - 4", variable: CPU, want: "6"},
		{expr: "(2 + 3) * 4", variable: CPU, want: "20"},
		{expr: "15 / 3", variable: CPU, want: "5"},
		{expr: "50%", variable: CPU, want: "500m"},
		{expr: "1e2", variable: CPU, want: "100"},
		{expr: "40m + 20m", variable: CPU, want: "60m"},
		{expr: "100Mi - 50Mi", variable: Memory, want: "50Mi"},
		{expr: "2 * 40m", variable: CPU, want: "80m"},
		{expr: "100m / 2", variable: CPU, want: "50m"},
		{expr: "max(40m, 20)", variable: CPU, want: "20"},
		{expr: "min(40m, 20m)", variable: CPU, want: "20m"},
		{expr: "min(max(max(max(500m,0.5*0.5),0.5-1.0),0.5-1.0),3.0)", variable: CPU, want: "500m"},
		{expr: "cpu", variable: CPU, value: "100m", want: "100m"},
		{expr: "cpu * 2", variable: CPU, value: "50m", want: "100m"},
		{expr: "max(cpu, 200m)", variable: CPU, value: "100m", want: "200m"},
		{expr: "min(max(max(max(0.5,0.5*cpu),cpu-1.0),cpu-1.0),3.0)", variable: CPU, value: "0.5", want: "500m"},
		{expr: "max(0.25, cpu)", variable: CPU, value: "100m", want: "250m"},
		{expr: "min(0.8, cpu)", variable: CPU, value: "1", want: "800m"},
		{expr: "max(min(2*cpu,-cpu+3.0),2*cpu-3.0)", variable: CPU, value: "1.5", want: "1500m"},
		{expr: "memory + 100Mi", variable: Memory, value: "200Mi", want: "300Mi"},
		{expr: "0.5 * memory + max(0, memory-2Gi)", variable: Memory, value: "8Gi", want: "10Gi"},
		{expr: "max(memory*50%, 100Mi)", variable: Memory, value: "1Gi", want: "512Mi"},
		{expr: "0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)", variable: CPU, value: "10", want: "3800m"},
		{expr: "CPU*50%", variable: "Cpu", value: "3", want: "1500m"},
		{expr: "cpu / 3", variable: CPU, value: "1", want: "333m"},
		{expr: "1.5", variable: CPU, want: "1500m"},
		{expr: "1.5", variable: Memory, want: "1"},
		{expr: "1024", variable: Memory, want: "1024"},
		{expr: "10 / 0", variable: CPU, wantErr: "division by zero"},
		{expr: "cpu / 0", variable: CPU, value: "1", wantErr: "division by zero"},
		{expr: "40m * 2m", variable: CPU, wantErr: "multiplication of two quantities"},
		{expr: "cpu * cpu", variable: CPU, value: "1", wantErr: "multiplication of two quantities"},
		{expr: "2 / 40m", variable: CPU, wantErr: "division by quantity"},
		{expr: "-10", variable: CPU, wantErr: "negative"},
		{expr: "50m - 100m", variable: CPU, wantErr: "negative"},
		{expr: "cpu - 100m", variable: CPU, value: "50m", wantErr: "negative"},
		{expr: "10 - 10", variable: CPU, want: "0"},
		{expr: "memory", variable: CPU, value: "1", wantErr: "undefined variable: memory"},
		{expr: "1e300 * 1e300", variable: CPU, wantErr: "out of range"},
		{expr: "1e16", variable: CPU, wantErr: "out of range"},
		{expr: "cpu * 1e300", variable: CPU, value: "1", wantErr: "out of range"},
		{expr: "cpu * 2", variable: CPU, value: "9000P", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.expr+"/"+tt.value, func(t *testing.T) {
			e, err := Parse(tt.expr)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.expr, err)
			}
			var val resource.Quantity
			if tt.value != "" {
				val = resource.MustParse(tt.value)
			}
			got, err := e.Eval(tt.variable, val)
			if gotErr := errString(err); !contains(gotErr, tt.wantErr) {
				t.Fatalf("Eval error = %q, want it to contain %q", gotErr, tt.wantErr)
			}
			if tt.wantErr == "" && got.String() != tt.want {
				t.Errorf("Eval(%q) = %s, want %s", tt.expr, got.String(), tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		expr     string
		variable string
		wantErr  string
	}{
		{expr: "cpu*50%", variable: CPU},
		{expr: "max(cpu*50%, 50m)", variable: CPU},
		{expr: "0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)", variable: CPU},
		{expr: "max(memory*50%, 100Mi)", variable: Memory},
		{expr: "100Mi", variable: Memory},
		{expr: "cpu - 2", variable: CPU}, // may be negative only for some values
		{expr: "cpu / (2 - 1)", variable: CPU},
		{expr: "invalidvar * 50%", variable: CPU, wantErr: "undefined variable: invalidvar"},
		{expr: "memory*50%", variable: CPU, wantErr: "undefined variable: memory"},
		{expr: "cpu*50%", variable: Memory, wantErr: "undefined variable: cpu"},
		{expr: "cpu * 100m", variable: CPU, wantErr: "multiplication of two quantities"},
		{expr: "2 / cpu", variable: CPU, wantErr: "division by quantity"},
		{expr: "cpu / (1 - 1)", variable: CPU, wantErr: "division by zero"},
		{expr: "-100m", variable: CPU, wantErr: "negative"},
		{expr: "10 / 0", variable: CPU, wantErr: "division by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, err := Parse(tt.expr)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.expr, err)
			}
			if got := errString(e.Check(tt.variable)); !contains(got, tt.wantErr) {
				t.Errorf("Check(%q) = %q, want it to contain %q", tt.variable, got, tt.wantErr)
			}
		})
	}
}

func TestVariables(t *testing.T) {
	e, err := Parse("max(CPU, cpu) + Memory - 1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"cpu", "memory"}, e.Variables()); diff != "" {
		t.Errorf("Variables() (-want +got):\n%s", diff)
	}
	if e.String() != "max(CPU, cpu) + Memory - 1" {
		t.Errorf("String() = %q", e.String())
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// contains reports whether got contains want; an empty want requires an empty got.
func contains(got, want string) bool {
	if want == "" {
		return got == ""
	}
	return strings.Contains(got, want)
}
