package predownload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParse(t *testing.T) {
	path := field.NewPath("metadata", "annotations")
	tests := []struct {
		name        string
		annotations map[string]string
		want        *Config
		wantErrs    []string
	}{
		{name: "none: off", annotations: map[string]string{"other": "1"}},
		{name: "parallelism alone: defaults", annotations: map[string]string{ParallelismAnnotation: "4"},
			want: &Config{Parallelism: 4, Timeout: 300 * time.Second}},
		{name: "timeout alone: parallelism 1", annotations: map[string]string{TimeoutAnnotation: "30"},
			want: &Config{Parallelism: 1, Timeout: 30 * time.Second}},
		{name: "all three", annotations: map[string]string{ParallelismAnnotation: "0", TimeoutAnnotation: "86400", MinUpdatedReadyAnnotation: "20%"},
			want: &Config{Timeout: 24 * time.Hour, MinUpdatedReady: intstr.FromString("20%")}},
		{name: "min-updated-ready as a count", annotations: map[string]string{MinUpdatedReadyAnnotation: "3"},
			want: &Config{Parallelism: 1, Timeout: 300 * time.Second, MinUpdatedReady: intstr.FromInt32(3)}},
		{name: "bad values name their annotation", annotations: map[string]string{ParallelismAnnotation: "-1", TimeoutAnnotation: "0", MinUpdatedReadyAnnotation: "101%"},
			want: &Config{Parallelism: 1, Timeout: 300 * time.Second},
			wantErrs: []string{
				`metadata.annotations[apps.kruise.io/image-predownload-parallelism]: Invalid value: "-1": must be a non-negative integer`,
				`metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]: Invalid value: "0": must be an integer number of seconds from 1 to 86400`,
				`metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]: Invalid value: "101%": must be a non-negative integer or a percentage from 0% to 100%`,
			}},
		{name: "not numbers", annotations: map[string]string{ParallelismAnnotation: "two", TimeoutAnnotation: "5m", MinUpdatedReadyAnnotation: "x%"},
			want: &Config{Parallelism: 1, Timeout: 300 * time.Second},
			wantErrs: []string{
				`metadata.annotations[apps.kruise.io/image-predownload-parallelism]: Invalid value: "two": must be a non-negative integer`,
				`metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]: Invalid value: "5m": must be an integer number of seconds from 1 to 86400`,
				`metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]: Invalid value: "x%": must be a non-negative integer or a percentage from 0% to 100%`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Parse(tt.annotations, path)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			if diff := cmp.Diff(tt.wantErrs, msgs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMinUpdatedReadyOf(t *testing.T) {
	for _, tt := range []struct {
		v     intstr.IntOrString
		total int32
		want  int32
	}{
		{intstr.FromInt32(5), 3, 5}, {intstr.FromString("10%"), 11, 2}, {intstr.FromString("0%"), 50, 0}, {intstr.FromString("100%"), 7, 7},
	} {
		c := Config{MinUpdatedReady: tt.v}
		if got := c.MinUpdatedReadyOf(tt.total); got != tt.want {
			t.Errorf("MinUpdatedReadyOf(%s of %d) = %d, want %d", tt.v.String(), tt.total, got, tt.want)
		}
	}
}
