package injection

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// FuzzInject feeds arbitrary pods (JSON) to Inject with the SidecarSets of a conformance
// scenario, as written or with selectors that match every pod, and with an arbitrary value of
// one of the bookkeeping annotations injection parses. Inject must not panic; when it
// succeeds its patch must turn the submitted pod into the returned one, and injecting the result
// again must change nothing. Seeds: the conformance pods.
//
//	go test ./pkg/injection -run '^$' -fuzz FuzzInject -fuzztime 60s
func FuzzInject(f *testing.F) {
	scenarios := loadScenarios(f)
	everywhere := make([][]*v1alpha1.SidecarSet, len(scenarios))
	for i, sc := range scenarios {
		for _, s := range sc.sidecarSets {
			c := s.DeepCopy()
			c.Spec.Namespace, c.Spec.NamespaceSelector = "", nil
			c.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "fuzz.example.com/never", Operator: metav1.LabelSelectorOpDoesNotExist},
			}}
			everywhere[i] = append(everywhere[i], c)
		}
		data, err := json.Marshal(sc.pod)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(i), false, uint8(0), "")
		f.Add(data, uint8(i), true, uint8(0), "")
	}
	f.Add([]byte(`{"metadata":{"labels":{"app":"inj-37"}}}`), uint8(0), true, uint8(1), `{"inj-01-ss":"legacy"}`)
	f.Add([]byte(`{}`), uint8(0), true, uint8(3), `{"dns-f":"dns-f-2"}`)
	f.Add([]byte(`{}`), uint8(0), true, uint8(2), `a,,b`)
	bookkeeping := []string{"", sidecar.HashAnnotation, sidecar.HashWithoutImageAnnotation, sidecar.InjectedListAnnotation,
		sidecar.WorkingHotUpgradeContainerAnnotation}
	f.Fuzz(func(t *testing.T, data []byte, which uint8, matchAll bool, key uint8, value string) {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(data, pod); err != nil {
			return
		}
		if k := bookkeeping[int(key)%len(bookkeeping)]; k != "" {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = value
			// The API server sends JSON: strings are valid UTF-8 (invalid bytes become U+FFFD).
			normalized, err := json.Marshal(pod)
			if err != nil {
				return
			}
			pod = &corev1.Pod{}
			if err := json.Unmarshal(normalized, pod); err != nil {
				t.Fatal(err)
			}
		}
		sc := scenarios[int(which)%len(scenarios)]
		in := sc.input(Options{})
		in.Pod = pod
		in.Namespace = ""
		if matchAll {
			in.SidecarSets = everywhere[int(which)%len(scenarios)]
		} else {
			in.SidecarSets = sc.sidecarSets
		}
		res, err := Inject(in)
		if err != nil {
			return
		}
		checkPatch(t, pod, res)
		if uniqueContainerNames(pod) {
			checkIdempotent(t, in, res.Pod)
		}
	})
}

// uniqueContainerNames reports whether the pod's containers, and its init containers, have
// distinct names (Kubernetes rejects other pods; injection then replaces only one duplicate).
func uniqueContainerNames(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		seen := map[string]bool{}
		for _, c := range list {
			if seen[c.Name] {
				return false
			}
			seen[c.Name] = true
		}
	}
	return true
}
