package cli

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestPrintObject: typed objects of the API print in every kubectl form, lists item by item.
func TestPrintObject(t *testing.T) {
	revs := &v1alpha1.SidecarSetRevisionList{Items: []v1alpha1.SidecarSetRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "logging-2"}, Revision: 2}, {ObjectMeta: metav1.ObjectMeta{Name: "logging-1"}, Revision: 1}}}
	tests := []struct {
		output string
		want   string
	}{
		{"name", "sidecarsetrevision.apps.kruise.io/logging-2\nsidecarsetrevision.apps.kruise.io/logging-1\n"},
		{"jsonpath={.items[*].revision}", "2 1"},
		{"go-template={{range .items}}{{.metadata.name}} {{end}}", "logging-2 logging-1 "},
		{"custom-columns=NAME:.metadata.name,REVISION:.revision", "NAME        REVISION\nlogging-2   2\nlogging-1   1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			var out bytes.Buffer
			o := NewOptions(strings.NewReader(""), &out, &out)
			o.Output = tt.output
			if err := o.CheckOutput(); err != nil {
				t.Fatal(err)
			}
			if err := o.Print(revs, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrintReport: reports print as json, yaml or through a template; -o name is refused.
func TestPrintReport(t *testing.T) {
	type result struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	}
	type checkReport struct {
		Checks []result `json:"checks"`
	}
	report := checkReport{Checks: []result{{Name: "a", Status: "ok"}, {Name: "b", Status: "error"}}}
	human := func(io.Writer) error { return errors.New("printed for people") }
	tests := []struct {
		output, want, wantErr string
	}{
		{output: "jsonpath={.checks[?(@.status==\"error\")].name}", want: "b"},
		{output: "name", wantErr: "not API objects"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		o := NewOptions(strings.NewReader(""), &out, &out)
		o.Output = tt.output
		err := o.Print(report, human)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.output, err, tt.wantErr)
			}
			continue
		}
		if err != nil || out.String() != tt.want {
			t.Errorf("%s: %q (%v), want %q", tt.output, out.String(), err, tt.want)
		}
	}
}
