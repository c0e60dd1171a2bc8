package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

func TestSameImage(t *testing.T) {
	const digest = "sha256:4f1e2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
	for _, tc := range []struct {
		spec, status string
		want         bool
	}{
		{"nginx:1.25", "nginx:1.25", true},
		{"nginx", "nginx", true},
		{"nginx", "nginx:latest", true},
		{"nginx", "docker.io/library/nginx:latest", true},
		{"nginx:1.25", "docker.io/library/nginx:1.25", true},
		{"docker.io/library/nginx:1.25", "nginx:1.25", true},
		{"nginx:1.25", "index.docker.io/library/nginx:1.25", true},
		{"team/app:2", "docker.io/team/app:2", true},
		{"team/app", "docker.io/team/app:latest", true},
		{"localhost:5000/app", "localhost:5000/app:latest", true},
		{"registry.example.com:5000/team/app", "registry.example.com:5000/team/app:latest", true},
		{"nginx@" + digest, "docker.io/library/nginx@" + digest, true},
		{"nginx:1.25", "nginx:1.26", false},
		{"nginx", "nginx:1.25", false},
		{"nginx:latest", "nginx:1.25", false},
		{"quay.io/team/app:1", "docker.io/team/app:1", false},
		{"localhost:5000/app:1", "localhost:5000/app:2", false},
		{"team/app:1", "other/app:1", false},
		{"nginx@" + digest, "nginx:latest", false},
		{"nginx@" + digest, "nginx@sha256:0000", false},
		{"nginx@" + digest, "nginx", false},
		// localhost is a registry host (with or without a port); a digest decides over a tag; a
		// reference that does not parse is compared as written.
		{"localhost/app:1", "localhost/app:1", true},
		{"localhost/app", "localhost/app:latest", true},
		{"localhost/app:1", "docker.io/localhost/app:1", false},
		{"localhost/app:1", "localhost:5000/app:1", false},
		{"nginx:1.25@" + digest, "docker.io/library/nginx@" + digest, true},
		{"nginx:1.25@" + digest, "nginx:1.25", false},
		{"Invalid/Image:1", "Invalid/Image:1", true},
		{"Invalid/Image:1", "invalid/image:1", false},
	} {
		if got := SameImage(tc.spec, tc.status); got != tc.want {
			t.Errorf("SameImage(%q, %q) = %v, want %v", tc.spec, tc.status, got, tc.want)
		}
		if got := SameImage(tc.status, tc.spec); got != tc.want {
			t.Errorf("SameImage(%q, %q) = %v, want %v (symmetry)", tc.status, tc.spec, got, tc.want)
		}
	}
}

// upgradedPod returns a pod injected from sidecar:v1 whose sidecar was upgraded in place to
// sidecar:v2 and not restarted yet (the kubelet still runs v1 and has not seen the new spec).
func upgradedPod(t *testing.T) *corev1.Pod {
	t.Helper()
	v1 := newSidecarSet("sidecar:v1", "h1", "nh1")
	pod := newPod("p", v1, func(p *corev1.Pod) {
		p.Generation, p.Status.ObservedGeneration = 3, 3
		statusOf(p, "sidecar").RestartCount = 2
	})
	v2 := withVersion(v1, "sidecar:v2", "h2", "nh1")
	if changed := upgradePod(pod, v2, t0); len(changed) != 1 || changed[0] != "sidecar" {
		t.Fatalf("upgrade changed %v, want [sidecar]", changed)
	}
	if pod.Generation != 4 {
		t.Fatalf("generation %d after the upgrade, want 4", pod.Generation)
	}
	return pod
}

func TestContainerUpgraded(t *testing.T) {
	sameDigest := func(p *corev1.Pod) { statusOf(p, "sidecar").ImageID = imageIDOf("sidecar:v1") }
	newContainer := func(p *corev1.Pod) {
		st := statusOf(p, "sidecar")
		st.ContainerID, st.RestartCount = "containerd://new", st.RestartCount+1
	}
	observe := func(p *corev1.Pod) { p.Status.ObservedGeneration = p.Generation }

	for _, tc := range []struct {
		name string
		pod  func(t *testing.T) *corev1.Pod
		c    string
		want bool
	}{
		{
			name: "status image is the spec image",
			pod:  func(*testing.T) *corev1.Pod { return newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1")) },
			want: true,
		},
		{
			name: "status image is the spec image up to registry defaults",
			pod: func(*testing.T) *corev1.Pod {
				return newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1"), func(p *corev1.Pod) {
					statusOf(p, "sidecar").Image = "docker.io/library/sidecar:v1"
				})
			},
			want: true,
		},
		{
			name: "upgraded, kubelet has not restarted the container",
			pod:  upgradedPod,
			want: false,
		},
		{
			name: "restarted on the new spec (kubelet restart)",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				restart(p, "sidecar")
				return p
			},
			want: true,
		},
		{
			name: "restarted (new containerID) and generation observed, image string and imageID unchanged (retag of the same digest)",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				newContainer(p)
				sameDigest(p)
				observe(p)
				return p
			},
			want: true,
		},
		{
			name: "restart count increased with the same containerID, generation observed",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				statusOf(p, "sidecar").RestartCount++
				observe(p)
				return p
			},
			want: true,
		},
		{
			name: "new containerID only, generation observed",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				statusOf(p, "sidecar").ContainerID = "containerd://other"
				observe(p)
				return p
			},
			want: true,
		},
		{
			name: "restarted (a crash) before the kubelet observed the new generation",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				newContainer(p)
				return p
			},
			want: false,
		},
		{
			name: "generation observed but the container did not restart yet",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				observe(p)
				return p
			},
			want: false,
		},
		{
			name: "restarted, kubelet does not report observedGeneration",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				newContainer(p)
				p.Status.ObservedGeneration = 0
				return p
			},
			want: true,
		},
		{
			name: "record without pod generation (older writer) trusts the restart",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z",` +
					`"lastContainerStatuses":{"sidecar":{"imageID":"x","containerID":"containerd://p-sidecar-0","restartCount":2}}}}`
				newContainer(p)
				return p
			},
			want: true,
		},
		{
			name: "OpenKruise record (imageID only), imageID unchanged",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z",` +
					`"lastContainerStatuses":{"sidecar":{"imageID":"` + imageIDOf("sidecar:v1") + `"}}}}`
				newContainer(p)
				observe(p)
				return p
			},
			want: false,
		},
		{
			name: "OpenKruise record (imageID only), imageID changed",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z",` +
					`"lastContainerStatuses":{"sidecar":{"imageID":"` + imageIDOf("sidecar:v1") + `"}}}}`
				statusOf(p, "sidecar").ImageID = "docker.io/library/sidecar@sha256:feed"
				return p
			},
			want: true,
		},
		{
			name: "no record although the status shows another image (nothing of ours is pending)",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				delete(p.Annotations, sidecar.InPlaceUpdateStateAnnotation)
				return p
			},
			want: true,
		},
		{
			name: "record of another SidecarSet only",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				v := p.Annotations[sidecar.InPlaceUpdateStateAnnotation]
				delete(p.Annotations, sidecar.InPlaceUpdateStateAnnotation)
				states, err := sidecar.ParseInPlaceUpdateStates(v)
				if err != nil {
					t.Fatal(err)
				}
				sidecar.RecordInPlaceUpdate(p.Annotations, "other", "x", t0, []string{"sidecar"}, map[string]sidecar.InPlaceUpdateContainerStatus{
					"sidecar": states[ssName].LastContainerStatuses["sidecar"],
				})
				return p
			},
			want: true,
		},
		{
			name: "record of another container only",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z",` +
					`"lastContainerStatuses":{"other":{"containerID":"x","podGeneration":3}}}}`
				return p
			},
			want: true,
		},
		{
			name: "malformed record",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":`
				newContainer(p)
				observe(p)
				return p
			},
			want: false,
		},
		{
			name: "malformed record, status image is the spec image",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				restart(p, "sidecar")
				p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `not json`
				return p
			},
			want: true,
		},
		{
			name: "no status for the container",
			pod: func(*testing.T) *corev1.Pod {
				return newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1"), func(p *corev1.Pod) {
					p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1] // app only
				})
			},
			want: false,
		},
		{
			name: "container not in the pod",
			pod:  func(*testing.T) *corev1.Pod { return newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1")) },
			c:    "absent",
			want: true,
		},
		{
			name: "digest-pinned spec image whose digest the imageID carries, restarted",
			pod: func(*testing.T) *corev1.Pod {
				return newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1"), func(p *corev1.Pod) {
					p.Spec.Containers[1].Image = "sidecar@sha256:" + digestOf("sidecar:v2")
					p.Generation, p.Status.ObservedGeneration = 2, 2
					st := statusOf(p, "sidecar")
					st.Image, st.ImageID = "docker.io/library/sidecar:v2", "docker-pullable://sidecar@sha256:"+digestOf("sidecar:v2")
					st.ContainerID, st.RestartCount = "containerd://p-sidecar-1", 1
					p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z",` +
						`"lastContainerStatuses":{"sidecar":{"containerID":"containerd://p-sidecar-0","podGeneration":1}}}}`
				})
			},
			want: true,
		},
		{
			name: "digest-pinned spec image whose digest the imageID carries, the recorded container still runs (tag -> digest of the same image)",
			pod: func(*testing.T) *corev1.Pod {
				return newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1"), func(p *corev1.Pod) {
					p.Spec.Containers[1].Image = "sidecar@sha256:" + digestOf("sidecar:v2")
					p.Generation, p.Status.ObservedGeneration = 2, 2
					st := statusOf(p, "sidecar")
					st.Image, st.ImageID = "docker.io/library/sidecar:v2", "docker-pullable://sidecar@sha256:"+digestOf("sidecar:v2")
					p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z",` +
						`"lastContainerStatuses":{"sidecar":{"containerID":"containerd://p-sidecar-0","podGeneration":1}}}}`
				})
			},
			want: false,
		},
		// A real kubelet with containerd: the status of a container names the first tag of its
		// image's digest, and observedGeneration follows the spec before the container is replaced.
		{
			name: "status already names the spec image (a tag sharing the old image's digest), not restarted, generation observed",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				statusOf(p, "sidecar").Image = "docker.io/library/sidecar:v2"
				observe(p)
				return p
			},
			want: false,
		},
		{
			name: "status already names the spec image, not restarted, generation not observed",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				statusOf(p, "sidecar").Image = "sidecar:v2"
				return p
			},
			want: false,
		},
		{
			name: "status names the spec image, restarted, generation not observed yet (a crash of the old container)",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				newContainer(p)
				statusOf(p, "sidecar").Image = "sidecar:v2"
				return p
			},
			want: false,
		},
		{
			name: "restarted, generation observed, the status names a mirror's digest reference (not the spec's string)",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				newContainer(p)
				st := statusOf(p, "sidecar")
				st.Image, st.ImageID = "mirror.invalid/sidecar@sha256:"+digestOf("sidecar:v2"), imageIDOf("sidecar:v2")
				observe(p)
				return p
			},
			want: true,
		},
		{
			name: "restarted, generation observed, new imageID and the spec image",
			pod: func(t *testing.T) *corev1.Pod {
				p := upgradedPod(t)
				newContainer(p)
				st := statusOf(p, "sidecar")
				st.Image, st.ImageID = "sidecar:v2", imageIDOf("sidecar:v2")
				observe(p)
				return p
			},
			want: true,
		},
		{
			name: "digest-pinned spec image, imageID of another digest, not restarted",
			pod: func(*testing.T) *corev1.Pod {
				return newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1"), func(p *corev1.Pod) {
					p.Spec.Containers[1].Image = "sidecar@sha256:" + digestOf("sidecar:v2")
					p.Generation = 2
					p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = `{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z",` +
						`"lastContainerStatuses":{"sidecar":{"containerID":"containerd://p-sidecar-0","podGeneration":1}}}}`
				})
			},
			want: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			if c == "" {
				c = "sidecar"
			}
			if got := ContainerUpgraded(NewPod(tc.pod(t)), ssName, c); got != tc.want {
				t.Errorf("ContainerUpgraded = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContainerUpgradedNativeSidecar(t *testing.T) {
	v1 := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.Spec.InitContainers = []v1alpha1.SidecarContainer{nativeSidecar("agent", "agent:v1")}
	})
	pod := newPod("p", v1)
	v2 := v1.DeepCopy()
	v2.Spec.InitContainers[0].Image = "agent:v2"
	v2.Annotations[sidecar.HashAnnotation] = "h2"
	if changed := upgradePod(pod, v2, t0); len(changed) != 1 || changed[0] != "agent" {
		t.Fatalf("upgrade changed %v, want [agent]", changed)
	}
	if ContainerUpgraded(NewPod(pod), ssName, "agent") {
		t.Error("native sidecar upgraded before its restart")
	}
	restart(pod, "agent")
	if !ContainerUpgraded(NewPod(pod), ssName, "agent") {
		t.Error("native sidecar not upgraded after its restart")
	}
}

func TestManaged(t *testing.T) {
	cold := newSidecarSet("sidecar:v1", "h1", "nh1")
	hot := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.Spec.Containers = append(ss.Spec.Containers, hotSidecar("proxy", "proxy:v1"))
	})
	native := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.Spec.InitContainers = []v1alpha1.SidecarContainer{nativeSidecar("agent", "agent:v1")}
	})
	now := metav1.NewTime(t0)
	for _, tc := range []struct {
		name string
		ss   *v1alpha1.SidecarSet
		pod  *corev1.Pod
		want bool
	}{
		{"running injected pod", cold, newPod("p", cold), true},
		{"pending pod", cold, newPod("p", cold, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), true},
		{"unknown phase", cold, newPod("p", cold, func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), true},
		{"not ready pod", cold, newPod("p", cold, notReady), true},
		{"succeeded pod", cold, newPod("p", cold, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		{"failed pod", cold, newPod("p", cold, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		{"terminating pod", cold, newPod("p", cold, func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false},
		{"no injected list", cold, newPod("p", cold, func(p *corev1.Pod) { delete(p.Annotations, sidecar.InjectedListAnnotation) }), false},
		{"injected list of others", cold, newPod("p", cold, func(p *corev1.Pod) { p.Annotations[sidecar.InjectedListAnnotation] = "a,b" }), false},
		{"name is a prefix of a listed one", cold, newPod("p", cold, func(p *corev1.Pod) { p.Annotations[sidecar.InjectedListAnnotation] = "ss-canary" }), false},
		{"listed among others", cold, newPod("p", cold, func(p *corev1.Pod) { p.Annotations[sidecar.InjectedListAnnotation] = "a,ss,z" }), true},
		{"sidecar container missing (added to the spec later)", cold, newPod("p", cold, func(p *corev1.Pod) { p.Spec.Containers = p.Spec.Containers[:1] }), false},
		{"sidecar only among init containers", cold, newPod("p", cold, func(p *corev1.Pod) {
			p.Spec.InitContainers = p.Spec.Containers[1:]
			p.Spec.Containers = p.Spec.Containers[:1]
		}), false},
		{"native sidecar present", native, newPod("p", native), true},
		{"native sidecar missing is not checked (OpenKruise checks containers only)", native, newPod("p", native, func(p *corev1.Pod) { p.Spec.InitContainers = nil }), true},
		{"hot upgrade twins and working entry", hot, newPod("p", hot), true},
		{"hot upgrade without working annotation", hot, newPod("p", hot, func(p *corev1.Pod) {
			delete(p.Annotations, sidecar.WorkingHotUpgradeContainerAnnotation)
		}), false},
		{"hot upgrade with a working entry of another sidecar only", hot, newPod("p", hot, func(p *corev1.Pod) {
			p.Annotations[sidecar.WorkingHotUpgradeContainerAnnotation] = `{"other":"other-1"}`
		}), false},
		{"hot upgrade with a malformed working annotation", hot, newPod("p", hot, func(p *corev1.Pod) {
			p.Annotations[sidecar.WorkingHotUpgradeContainerAnnotation] = `{`
		}), false},
		{"hot upgrade working entry naming X-2", hot, newPod("p", hot, func(p *corev1.Pod) {
			p.Annotations[sidecar.WorkingHotUpgradeContainerAnnotation] = `{"proxy":"proxy-2"}`
		}), true},
		{"hot upgrade twin X-2 missing", hot, newPod("p", hot, func(p *corev1.Pod) {
			p.Spec.Containers = p.Spec.Containers[:len(p.Spec.Containers)-1]
		}), false},
		{"hot upgrade sidecar as a plain container", hot, newPod("p", cold, func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Image: "proxy:v1"})
			p.Annotations[sidecar.WorkingHotUpgradeContainerAnnotation] = `{"proxy":"proxy-1"}`
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Managed(tc.ss, NewPod(tc.pod)); got != tc.want {
				t.Errorf("Managed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWaitingFailure(t *testing.T) {
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
		"CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "RunContainerError"} {
		pod := newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1"), func(p *corev1.Pod) {
			statusOf(p, "sidecar").State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
		})
		if r, c := waitingFailure(NewPod(pod), []string{"sidecar"}); r != reason || c != "sidecar" {
			t.Errorf("waitingFailure = %q, %q; want %q, sidecar", r, c, reason)
		}
	}
	pod := newPod("p", newSidecarSet("sidecar:v1", "h1", "nh1"), func(p *corev1.Pod) {
		statusOf(p, "sidecar").State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		statusOf(p, "app").State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	})
	if r, c := waitingFailure(NewPod(pod), []string{"sidecar"}); r != "" || c != "" {
		t.Errorf("waitingFailure = %q, %q; want none (ContainerCreating is no failure, app containers are not ours)", r, c)
	}
}

func TestMissedInjection(t *testing.T) {
	ss := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	})
	paused := ss.DeepCopy()
	paused.Spec.InjectionStrategy.Paused = true
	bare := func(p *corev1.Pod) {
		delete(p.Annotations, sidecar.InjectedListAnnotation)
		p.Spec.Containers = p.Spec.Containers[:1]
	}
	now := metav1.NewTime(t0)
	for _, tc := range []struct {
		name string
		ss   *v1alpha1.SidecarSet
		pod  *corev1.Pod
		want bool
	}{
		{"injected", ss, newPod("p", ss), false},
		{"created after the SidecarSet, not injected", ss, newPod("p", ss, bare), true},
		{"listing other SidecarSets only", ss, newPod("p", ss, bare, func(p *corev1.Pod) { p.Annotations[sidecar.InjectedListAnnotation] = "a,b" }), true},
		{"created before the SidecarSet", ss, newPod("p", ss, bare, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-2 * time.Hour)) }), true},
		{"injection paused", paused, newPod("p", paused, bare), false},
		{"terminating", ss, newPod("p", ss, bare, func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false},
		{"succeeded", ss, newPod("p", ss, bare, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MissedInjection(tc.ss, NewPod(tc.pod)); got != tc.want {
				t.Errorf("MissedInjection = %v, want %v", got, tc.want)
			}
		})
	}
}
