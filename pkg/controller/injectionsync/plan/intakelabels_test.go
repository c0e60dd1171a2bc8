package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
)

// sentByIntake reports whether an intake webhook of webhooks receives a pod with labels podLabels
// in namespace ns (labelled as kube-apiserver labels every namespace).
func sentByIntake(t *testing.T, webhooks []admissionregistrationv1.MutatingWebhook, ns string, podLabels map[string]string) bool {
	t.Helper()
	_, open := webhookconfig.SplitIntake(webhooks)
	for _, w := range open {
		if matches(t, w.NamespaceSelector, map[string]string{corev1.LabelMetadataName: ns}) && matches(t, w.ObjectSelector, podLabels) {
			return true
		}
	}
	return false
}

func matches(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labelSet(set))
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

// TestIntakeLabelScopes: a cluster SidecarSet's write whose versions require a label key holds
// the pods with that key, in every namespace, and no other pod (unless a namespace or cluster hold
// covers it); the holds read back from the configuration; one label key too many turns them into
// a cluster hold.
func TestIntakeLabelScopes(t *testing.T) {
	state := IntakeState{Namespaces: map[string]IntakeHold{"label:app": hold(0, 10*time.Second), "label:example.com/tier": hold(time.Second, 11*time.Second),
		"team-a": hold(0, 10*time.Second)}}
	active := withIntake(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-injector-active"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io"}}}, state)
	for _, tc := range []struct {
		ns     string
		labels map[string]string
		want   bool
	}{
		{"shop", map[string]string{"app": "web"}, true},
		{"shop", map[string]string{"example.com/tier": "front"}, true},
		{"shop", map[string]string{"team": "x"}, false},
		{"shop", nil, false},
		{"team-a", nil, true},
	} {
		if got := sentByIntake(t, active.Webhooks, tc.ns, tc.labels); got != tc.want {
			t.Errorf("pod %v in %s sent to the server: %v, want %v", tc.labels, tc.ns, got, tc.want)
		}
	}
	if diff := cmp.Diff(state, ReadIntake(active, template().Webhooks, nil)); diff != "" {
		t.Errorf("state read back (-want +got):\n%s", diff)
	}

	// A label key under a loaded cluster hold writes nothing; one under a label hold of its own neither.
	for _, s := range []IntakeState{{Cluster: clusterHold(0, 10*time.Second)}, state} {
		if _, write := s.Open("label:app", t0.Add(2*time.Second), intakeHold); write {
			t.Errorf("label:app under %+v: written again", s)
		}
	}
	many := IntakeState{Namespaces: map[string]IntakeHold{}}
	for i := range MaxIntakeLabels {
		many.Namespaces[fmt.Sprintf("label:key-%02d", i)] = hold(0, 12*time.Second)
	}
	got, write := many.Open("label:one-more", t0.Add(time.Second), intakeHold)
	if want := (IntakeState{Cluster: clusterHold(time.Second, 12*time.Second)}); !write || !cmp.Equal(want, got) {
		t.Errorf("one label key too many: %+v (write %v), want %+v", got, write, want)
	}
}
