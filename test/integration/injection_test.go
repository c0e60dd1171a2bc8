package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// TestInjectionThroughAdmissionReview posts pod CREATE reviews to sidecarinjections, as
// kube-apiserver does through the aggregation layer, and checks the returned JSON patch.
func TestInjectionThroughAdmissionReview(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	in := &v1alpha1.SidecarSet{}
	if err := yaml.Unmarshal([]byte(manualExample), in); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.AppsV1alpha1().SidecarSets().Create(ctx, in, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "nginx"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
	}
	// The informer fills the index shortly after the create; retry until the sidecar shows up.
	var patch []map[string]interface{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		resp := review(t, s.Config, pod)
		if !resp.Allowed {
			return false, nil // not synced yet
		}
		patch = nil
		if len(resp.Patch) > 0 {
			if err := json.Unmarshal(resp.Patch, &patch); err != nil {
				return false, err
			}
		}
		return len(patch) > 0, nil
	})
	if err != nil {
		t.Fatalf("no injection patch: %v", err)
	}
	raw, _ := json.Marshal(patch)
	for _, want := range []string{`"sidecar1"`, `"log-volume"`, `"IS_INJECTED"`, `kruise.io/sidecarset-injected-list`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("patch lacks %s: %s", want, raw)
		}
	}

	other := pod.DeepCopy()
	other.Labels = map[string]string{"app": "other"}
	if resp := review(t, s.Config, other); !resp.Allowed || len(resp.Patch) != 0 {
		t.Errorf("non-matching pod: allowed=%v patch=%s", resp.Allowed, resp.Patch)
	}
}

func review(t *testing.T, cfg *rest.Config, pod *corev1.Pod) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	req := &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("review-1"),
			Operation: admissionv1.Create,
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: pod.Namespace,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	body, _ := json.Marshal(req)
	client, err := rest.RESTClientFor(restConfigFor(cfg))
	if err != nil {
		t.Fatal(err)
	}
	out, err := client.Post().AbsPath("/apis/admission.kruise.io/v1/sidecarinjections").
		SetHeader("Content-Type", "application/json").Body(body).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("review: %v: %s", err, out)
	}
	resp := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(out, resp); err != nil {
		t.Fatal(err)
	}
	if resp.Response == nil || resp.Response.UID != "review-1" {
		t.Fatalf("bad review response: %s", out)
	}
	return resp.Response
}

func restConfigFor(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &admissionv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{})
	return c
}
