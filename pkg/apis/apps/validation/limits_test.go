package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

const (
	tooMany = field.ErrorTypeTooMany
	tooLong = field.ErrorTypeTooLong
)

// inValues returns a selector requiring key to be one of n values.
func inValues(key string, n int) *metav1.LabelSelector {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("v%d", i)
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}}}
}

// containers returns n valid containers named prefix-<i>.
func containers(prefix string, n int) []apps.SidecarContainer {
	out := make([]apps.SidecarContainer, n)
	for i := range out {
		out[i] = validContainer(fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// withLargeEnv makes the first container's spec about size bytes larger, in one env value.
func withLargeEnv(ss *apps.SidecarSet, size int) {
	c := &ss.Spec.Containers[0].Container
	c.Env = append(c.Env, corev1.EnvVar{Name: "BIG", Value: strings.Repeat("x", size)})
}

// limitCases are the limits, each met exactly and exceeded by one, for both kinds.
var limitCases = []specCase{
	{name: "revisionHistoryLimit at the limit", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.RevisionHistoryLimit = ptr.To[int32](MaxRevisionHistoryLimit)
	}},
	{name: "revisionHistoryLimit past the limit", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.RevisionHistoryLimit = ptr.To[int32](2147483647)
	}, want: []wantErr{{"spec.revisionHistoryLimit", invalid, "must be less than or equal to 100"}}},
	{name: "selector values at the limit", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.Selector = inValues("app", MaxSelectorValues)
	}},
	{name: "selector values past the limit", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.Selector = inValues("app", MaxSelectorValues)
		ss.Spec.Selector.MatchLabels = map[string]string{"tier": "web"}
	}, want: []wantErr{{"spec.selector", tooMany, "must have at most 64 label values (matchLabels entries and matchExpressions values together), has 65"}}},
	{name: "Exists counts one value", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.Selector = inValues("app", MaxSelectorValues)
		ss.Spec.Selector.MatchExpressions = append(ss.Spec.Selector.MatchExpressions,
			metav1.LabelSelectorRequirement{Key: "tier", Operator: metav1.LabelSelectorOpExists})
	}, want: []wantErr{{"spec.selector", tooMany, "has 65"}}},
	{name: "containers at the limit", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.Containers = containers("c", MaxContainers)
	}},
	{name: "containers past the limit", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.Containers = containers("c", MaxContainers+1)
	}, want: []wantErr{{"spec.containers", tooMany, "must have at most 16 items"}}},
	{name: "init containers past the limit", mutate: func(ss *apps.SidecarSet) {
		ss.Spec.InitContainers = containers("i", MaxContainers+1)
	}, want: []wantErr{{"spec.initContainers", tooMany, "must have at most 16 items"}}},
	{name: "spec just under the size limit", mutate: func(ss *apps.SidecarSet) {
		withLargeEnv(ss, MaxSpecBytes-2048)
	}},
	{name: "spec past the size limit", mutate: func(ss *apps.SidecarSet) {
		withLargeEnv(ss, MaxSpecBytes)
	}, want: []wantErr{{"spec", tooLong, "may not be more than 131072 bytes as stored (JSON)"}}},
}

func TestValidateLimitsSidecarSet(t *testing.T) {
	runSpecCases(t, append(limitCases, specCase{
		name: "namespaceSelector values past the limit", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.NamespaceSelector = inValues("team", MaxSelectorValues+1)
		}, want: []wantErr{{"spec.namespaceSelector", tooMany, "has 65"}}}))
}

// TestValidateLimitsNamespaced checks that a NamespacedSidecarSet meets the same limits, with the
// same field paths.
func TestValidateLimitsNamespaced(t *testing.T) {
	for _, tc := range limitCases {
		t.Run(tc.name, func(t *testing.T) {
			n := validNamespaced("team-a", "logs")
			v := n.View()
			tc.mutate(v)
			n.Spec = v.Spec
			checkErrors(t, tc.want, ValidateNamespacedSidecarSet(n))
		})
	}
}

// TestValidateLimitsUpdate checks that an update is held to a limit only when it changes the field
// past it: objects stored beyond a limit stay writable but cannot grow.
func TestValidateLimitsUpdate(t *testing.T) {
	overLimit := func(ss *apps.SidecarSet) {
		ss.Spec.RevisionHistoryLimit = ptr.To[int32](500)
		ss.Spec.Selector = inValues("app", MaxSelectorValues+1)
		withLargeEnv(ss, MaxSpecBytes)
	}
	tests := []struct {
		name   string
		old    func(ss *apps.SidecarSet)
		change func(ss *apps.SidecarSet)
		want   []wantErr
	}{
		{name: "unchanged fields past the limits pass", old: overLimit, change: func(ss *apps.SidecarSet) {
			ss.Spec.Containers[0].Image = "test-image:2.0"
		}},
		{name: "raised revisionHistoryLimit refused", old: overLimit, change: func(ss *apps.SidecarSet) {
			ss.Spec.RevisionHistoryLimit = ptr.To[int32](501)
		}, want: []wantErr{{"spec.revisionHistoryLimit", invalid, ""}}},
		{name: "changed selector still past the limit refused", old: overLimit, change: func(ss *apps.SidecarSet) {
			ss.Spec.Selector.MatchExpressions[0].Values[0] = "w0" // the same size: only the selector rule applies
		}, want: []wantErr{{"spec.selector", tooMany, ""}}},
		{name: "grown spec refused", old: overLimit, change: func(ss *apps.SidecarSet) {
			withLargeEnv(ss, 10)
		}, want: []wantErr{{"spec", tooLong, ""}}},
		{name: "new values past the limits refused", change: func(ss *apps.SidecarSet) {
			ss.Spec.RevisionHistoryLimit = ptr.To[int32](101)
			ss.Spec.Selector = inValues("app", MaxSelectorValues+1)
		}, want: []wantErr{{"spec.revisionHistoryLimit", invalid, ""}, {"spec.selector", tooMany, ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validSidecarSet("test-sidecarset")
			if tc.old != nil {
				tc.old(old)
			}
			ss := old.DeepCopy()
			tc.change(ss)
			checkErrors(t, tc.want, ValidateSidecarSetUpdate(ss, old))
		})
	}
}
