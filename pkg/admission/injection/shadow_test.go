package injection

import (
	"strings"
	"testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestShadowedNamespacedSidecarSet: a NamespacedSidecarSet (named <namespace>.<name>) that
// collides with a cluster SidecarSet selecting the same pod is left out of that pod, whichever
// sorts first and whether the cluster SidecarSet is injected now or was earlier in the admission;
// one that does not collide is injected beside it.
func TestShadowedNamespacedSidecarSet(t *testing.T) {
	mesh := mustSidecarSet(t, `
metadata: {name: mesh}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: proxy, image: "envoy:cluster"}]
  volumes: [{name: data, emptyDir: {}}]`)
	squat := mustSidecarSet(t, `
metadata: {name: team-a.squat}
spec:
  namespace: team-a
  selector: {matchLabels: {app: web}}
  containers: [{name: proxy, image: "envoy:tenant"}, {name: extra, image: busybox}]`)
	volume := mustSidecarSet(t, `
metadata: {name: a.vol}
spec:
  namespace: a
  selector: {matchLabels: {app: web}}
  containers: [{name: reader, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, hostPath: {path: /var/log}}]`)
	volume.Namespace = ""
	friendly := mustSidecarSet(t, `
metadata: {name: team-a.logs}
spec:
  namespace: team-a
  selector: {matchLabels: {app: web}}
  containers: [{name: logs, image: busybox}]`)
	for _, tc := range []struct {
		name       string
		namespace  string
		sets       []*v1alpha1.SidecarSet
		earlier    []*v1alpha1.SidecarSet // injected earlier in the admission (SkipInjected)
		containers string
		shadowed   string
	}{
		{"a container name", "team-a", []*v1alpha1.SidecarSet{mesh, squat}, nil, "proxy=envoy:cluster app", "team-a.squat"},
		{"a volume defined otherwise", "a", []*v1alpha1.SidecarSet{volume, mesh}, nil, "proxy=envoy:cluster app", "a.vol"},
		{"no collision", "team-a", []*v1alpha1.SidecarSet{mesh, friendly}, nil, "proxy=envoy:cluster logs=busybox app", ""},
		{"the cluster SidecarSet injected earlier", "team-a", []*v1alpha1.SidecarSet{mesh, squat}, []*v1alpha1.SidecarSet{mesh}, "proxy=envoy:cluster app", "team-a.squat"},
		{"without a cluster SidecarSet", "team-a", []*v1alpha1.SidecarSet{squat}, nil, "proxy=envoy:tenant extra=busybox app", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := mustPod(t, `
metadata: {name: p, labels: {app: web}}
spec:
  containers: [{name: app, image: nginx}]`)
			pod.Namespace = tc.namespace
			if len(tc.earlier) > 0 {
				first, err := Inject(Input{Pod: pod, SidecarSets: tc.earlier, Now: testNow})
				if err != nil {
					t.Fatal(err)
				}
				pod = first.Pod
			}
			res, err := Inject(Input{Pod: pod, SidecarSets: tc.sets, Now: testNow, Options: Options{SkipInjected: len(tc.earlier) > 0}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Pod.Spec.Containers {
				if c.Name == "app" {
					got = append(got, c.Name)
				} else {
					got = append(got, c.Name+"="+c.Image)
				}
			}
			if strings.Join(got, " ") != tc.containers {
				t.Errorf("containers %q, want %q", strings.Join(got, " "), tc.containers)
			}
			for _, d := range res.Decisions {
				if (d.Reason == ReasonShadowed) != (d.SidecarSet == tc.shadowed) {
					t.Errorf("decision of %s: %+v (shadowed: %q)", d.SidecarSet, d, tc.shadowed)
				}
			}
			var warned []string
			for _, w := range res.Warnings {
				if strings.Contains(w.Message, "cluster SidecarSet mesh") {
					warned = append(warned, w.SidecarSet)
				}
			}
			if want := tc.shadowed; strings.Join(warned, ",") != want {
				t.Errorf("warnings %v, want one for %q", res.Warnings, want)
			}
		})
	}
}
