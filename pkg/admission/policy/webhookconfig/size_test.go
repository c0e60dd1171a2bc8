package webhookconfig

import (
	"encoding/json"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestWebhooksFitEtcd: with 50,000 SidecarSets of every benchmark shape, the webhooks of the
// configuration (two classes of namespace, as shipped) stay below etcd's default request limit,
// 1.5 MiB, which the mixed shape's 6 MB of label values broke (kube-apiserver refused every write
// of the configuration, and no SidecarSet written since was served); and every SidecarSet's pods
// still reach a webhook whose objectSelector selects them.
func TestWebhooksFitEtcd(t *testing.T) {
	const etcdLimit = 1536 * 1024
	templates := []admissionregistrationv1.MutatingWebhook{
		{Name: "sidecarinjection.example.com", NamespaceSelector: &metav1.LabelSelector{}},
		{Name: "sidecarinjection-system.example.com", NamespaceSelector: &metav1.LabelSelector{}},
	}
	for _, shape := range policytest.Shapes {
		t.Run(shape, func(t *testing.T) {
			sets := policytest.BenchSidecarSets(shape, 50000)
			matches, _ := Matches(sets, nil, nil)
			b, err := json.Marshal(ExpandWebhooks(templates, matches, []string{"kube-system"}))
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > etcdLimit-100_000 {
				t.Errorf("%d bytes of webhooks, over etcd's limit of %d less 100,000 for the rest of the configuration", len(b), etcdLimit)
			}
			for i := 0; i < len(sets); i += 997 {
				sel := sets[i].Spec.Selector
				pod := labels.Set(sel.MatchLabels)
				if k, values := apps.RequiredLabel(sel); k != "" && len(values) > 0 && pod[k] == "" {
					pod = labels.Merge(pod, labels.Set{k: values[0]})
				}
				if !selectedBySome(t, matches, pod) {
					t.Errorf("a pod %v of %s reaches no webhook", pod, sets[i].Name)
				}
			}
		})
	}
}

func selectedBySome(t *testing.T, matches []WebhookMatch, pod labels.Set) bool {
	for _, m := range matches {
		s, err := metav1.LabelSelectorAsSelector(m.ObjectSelector)
		if err != nil {
			t.Fatal(err)
		}
		if s.Matches(pod) {
			return true
		}
	}
	return false
}
