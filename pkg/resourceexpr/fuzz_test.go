package resourceexpr

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FuzzExpr checks that parsing, checking and evaluating never panic, that Check's verdict holds
// for Eval whenever Check rejects a constant expression, and that results are never negative.
func FuzzExpr(f *testing.F) {
	for _, seed := range []string{
		"cpu*50%", "max(cpu*50%, 50m)", "0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)",
		"max(memory*50%, 100Mi)", "min(-cpu, 1e3)", "10 / 0", "1e308*10", "((1))", "-(-(2Gi))",
		"9999999P * 1000", "cpu / 3", "5x", "1.5.5", "max(1,2,3)",
	} {
		f.Add(seed, "1500m")
	}
	f.Fuzz(func(t *testing.T, expr, val string) {
		e, err := Parse(expr)
		if err != nil {
			return
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			q = resource.MustParse("1")
		}
		for _, variable := range []string{CPU, Memory} {
			checkErr := e.Check(variable)
			got, err := e.Eval(variable, q)
			if err == nil && got.Sign() < 0 {
				t.Fatalf("Eval(%q, %s=%s) = %s, negative", expr, variable, q.String(), got.String())
			}
			if checkErr != nil && len(e.Variables()) == 0 && err == nil {
				t.Fatalf("Check(%q) = %v but Eval succeeded", expr, checkErr)
			}
		}
	})
}
