package crossvalidation

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// importedRevision is a revision of SidecarSet sidecarSet a client imports, injecting one
// container.
func importedRevision(sidecarSet, container string) *apps.SidecarSetRevision {
	return &apps.SidecarSetRevision{
		ObjectMeta: metav1.ObjectMeta{Name: sidecarSet + "-1", Labels: map[string]string{
			v1alpha1.SidecarSetNameLabel: sidecarSet, "team": "platform"}},
		SidecarSetName: sidecarSet, Revision: 1,
		Spec: apps.SidecarSetRevisionSpec{Containers: []apps.SidecarContainer{{Container: corev1.Container{Name: container, Image: container + ":1"}}}},
	}
}

func revisionCreate(r *apps.SidecarSetRevision) admission.Attributes {
	return admission.NewAttributesRecord(r, nil, apps.Kind("SidecarSetRevision").WithVersion(""), "", r.Name,
		apps.Resource("sidecarsetrevisions").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

// TestRevisionImport: a revision a client imports gets the checks a write of its SidecarSet
// injecting the snapshot gets: the patchPodMetadata whitelist (with the SidecarSet's labels, or
// the revision's before the SidecarSet exists), conflicts with the other SidecarSets and Pod
// Security with the stored SidecarSet's selection; before its SidecarSet exists the pods it will
// select are unknown, so conflicts are left to the SidecarSet's create and Pod Security warns.
func TestRevisionImport(t *testing.T) {
	privileged := func(r *apps.SidecarSetRevision) {
		r.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}
	patch := func(key string) func(r *apps.SidecarSetRevision) {
		return func(r *apps.SidecarSetRevision) {
			r.Spec.PatchPodMetadata = []apps.SidecarSetPatchPodMetadata{{Annotations: map[string]string{key: "x"},
				PatchPolicy: apps.SidecarSetMergePatchJsonPatchPolicy}}
		}
	}
	whitelist := `{"rules":[{"selector":{"matchLabels":{"team":"platform"}},"allowedAnnotationKeyExprs":["^allowed\\.io/"]}]}`
	for _, tc := range []struct {
		name      string
		sets      []*v1alpha1.SidecarSet
		whitelist *string
		change    func(*apps.SidecarSetRevision)
		want      *refusal
	}{
		{name: "no conflict", sets: []*v1alpha1.SidecarSet{cluster("logs", "", "logs"), cluster("audit", "", "audit-agent")}},
		{name: "a container of another SidecarSet selecting the same pods",
			sets:   []*v1alpha1.SidecarSet{cluster("logs", "", "logs"), cluster("audit", "", "audit-agent")},
			change: func(r *apps.SidecarSetRevision) { r.Spec.Containers[0].Name = "audit-agent" },
			want: &refusal{Kind: "SidecarSetRevision", Name: "logs-1", Causes: []string{
				"spec.containers[0].name: audit-agent"}}},
		{name: "the same container before its SidecarSet exists: its create decides",
			sets:   []*v1alpha1.SidecarSet{cluster("audit", "", "audit-agent")},
			change: func(r *apps.SidecarSetRevision) { r.Spec.Containers[0].Name = "audit-agent" }},
		{name: "the same container for a SidecarSet of other pods",
			sets:   []*v1alpha1.SidecarSet{cluster("logs", "team-a", "logs"), cluster("audit", "team-b", "audit-agent")},
			change: func(r *apps.SidecarSetRevision) { r.Spec.Containers[0].Name = "audit-agent" }},
		{name: "patchPodMetadata without a whitelist", sets: []*v1alpha1.SidecarSet{cluster("logs", "", "logs")},
			change: patch("allowed.io/a"),
			want: &refusal{Kind: "SidecarSetRevision", Name: "logs-1", Causes: []string{
				"spec.patchPodMetadata: whitelist not found"}}},
		{name: "patchPodMetadata without a whitelist, before the SidecarSet", change: patch("allowed.io/a"),
			want: &refusal{Kind: "SidecarSetRevision", Name: "logs-1", Causes: []string{
				"spec.patchPodMetadata: whitelist not found"}}},
		{name: "a whitelisted key, rule selecting the revision's labels", whitelist: &whitelist, change: patch("allowed.io/a")},
		{name: "a key not whitelisted", whitelist: &whitelist, change: patch("other.io/a"),
			want: &refusal{Kind: "SidecarSetRevision", Name: "logs-1", Causes: []string{
				"spec.patchPodMetadata[0].annotations[other.io/a]: is not allowed"}}},
		{name: "privileged, the SidecarSet selecting a baseline namespace",
			sets: []*v1alpha1.SidecarSet{cluster("logs", "restricted-ns", "logs")}, change: privileged,
			want: &refusal{Kind: "SidecarSetRevision", Name: "logs-1", Causes: []string{
				"spec.containers: restricted-ns"}}},
		{name: "privileged, the SidecarSet selecting a privileged namespace",
			sets: []*v1alpha1.SidecarSet{cluster("logs", "open-ns", "logs")}, change: privileged},
		{name: "privileged before its SidecarSet exists: a warning", change: privileged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.sets, nil)
			nsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, ns := range []*corev1.Namespace{
				{ObjectMeta: metav1.ObjectMeta{Name: "restricted-ns", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "open-ns"}},
			} {
				if err := nsIndexer.Add(ns); err != nil {
					t.Fatal(err)
				}
			}
			p.in.Namespaces = corelisters.NewNamespaceLister(nsIndexer)
			p.in.RefusePodSecurityViolations = true
			p.in.Whitelist = func() (*string, error) { return tc.whitelist, nil }
			r := importedRevision("logs", "logs")
			if tc.change != nil {
				tc.change(r)
			}
			checkRefusal(t, p.Validate(context.Background(), revisionCreate(r), nil), tc.want)
		})
	}
}
