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
	initProxy := mustSidecarSet(t, `
metadata: {name: team-a.init}
spec:
  namespace: team-a
  selector: {matchLabels: {app: web}}
  initContainers: [{name: proxy, image: "envoy:tenant"}]`)
	hot := mustSidecarSet(t, `
metadata: {name: hot}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - {name: log, image: "log:cluster", upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: "empty:1"}}`)
	twin := mustSidecarSet(t, `
metadata: {name: team-a.twin}
spec:
  namespace: team-a
  selector: {matchLabels: {app: web}}
  containers: [{name: log-1, image: "log:tenant"}]`)
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
		{"an init container named like a container", "team-a", []*v1alpha1.SidecarSet{mesh, initProxy}, nil, "proxy=envoy:cluster app", "team-a.init"},
		{"a hot-upgrade twin's name", "team-a", []*v1alpha1.SidecarSet{hot, twin}, nil, "log-1=log:cluster log-2=empty:1 app", "team-a.twin"},
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
				if strings.Contains(w.Message, "and a cluster SidecarSet wins") {
					warned = append(warned, w.SidecarSet)
				}
			}
			if want := tc.shadowed; strings.Join(warned, ",") != want {
				t.Errorf("warnings %v, want one for %q", res.Warnings, want)
			}
		})
	}
}

// TestClusterSidecarSetCollidingWithPresent: a NamespacedSidecarSet injected earlier in the
// admission (by a policy kube-apiserver has not reloaded since the colliding cluster SidecarSet
// was written) keeps the pod; the cluster SidecarSet is left out of that pod rather than give it
// two containers of one name.
func TestClusterSidecarSetCollidingWithPresent(t *testing.T) {
	mesh := mustSidecarSet(t, `
metadata: {name: mesh}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: proxy, image: "envoy:cluster"}]`)
	squat := mustSidecarSet(t, `
metadata: {name: team-a.squat}
spec:
  namespace: team-a
  selector: {matchLabels: {app: web}}
  containers: [{name: proxy, image: "envoy:tenant"}]`)
	pod := mustPod(t, `
metadata: {name: p, namespace: team-a, labels: {app: web}}
spec:
  containers: [{name: app, image: nginx}]`)
	first, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{squat}, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Inject(Input{Pod: first.Pod, SidecarSets: []*v1alpha1.SidecarSet{mesh, squat}, Now: testNow, Options: Options{SkipInjected: true}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range res.Pod.Spec.Containers {
		names = append(names, c.Name+"="+c.Image)
	}
	if got := strings.Join(names, " "); got != "proxy=envoy:tenant app=nginx" {
		t.Errorf("containers %q, want the tenant's proxy once", got)
	}
	for _, d := range res.Decisions {
		if d.SidecarSet == "mesh" && d.Reason != ReasonCollidesWithPresent {
			t.Errorf("decision of mesh: %+v", d)
		}
	}
	if len(res.Warnings) != 1 || res.Warnings[0].SidecarSet != "mesh" {
		t.Errorf("warnings %v, want one for mesh", res.Warnings)
	}
}
