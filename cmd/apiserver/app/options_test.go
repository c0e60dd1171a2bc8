package app

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestMaxNamespacedBytesFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    int64
		wantErr string // in the parse or validation error
	}{
		{args: nil, want: 16 << 20},
		{args: []string{"--max-namespaced-bytes-per-namespace=4Mi"}, want: 4 << 20},
		{args: []string{"--max-namespaced-bytes-per-namespace=500k"}, want: 500000},
		{args: []string{"--max-namespaced-bytes-per-namespace=1048576"}, want: 1 << 20},
		{args: []string{"--max-namespaced-bytes-per-namespace=0"}, want: 0},
		{args: []string{"--max-namespaced-bytes-per-namespace=0.5"}, want: 1},
		{args: []string{"--max-namespaced-bytes-per-namespace=-1Mi"}, want: -1 << 20, wantErr: "must not be negative"},
		{args: []string{"--max-namespaced-bytes-per-namespace=lots"}, wantErr: "quantities must match"},
		{args: []string{"--max-namespaced-bytes-per-namespace=100Ei"}, wantErr: "too large"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			err := fs.Parse(tc.args)
			if err == nil {
				if got := o.MaxNamespacedBytesPerNamespace; got != tc.want {
					t.Errorf("MaxNamespacedBytesPerNamespace = %d, want %d", got, tc.want)
				}
				err = o.Validate()
				if err != nil && !strings.Contains(err.Error(), "max-namespaced-bytes") {
					err = nil // the other options' defaults need a cluster to validate
				}
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestMaxNamespacedBytesFlagDefault(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	if got := fs.Lookup("max-namespaced-bytes-per-namespace").DefValue; got != "16Mi" {
		t.Errorf("default shown as %q, want 16Mi", got)
	}
}
