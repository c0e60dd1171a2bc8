package rollout

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

func TestNewPod(t *testing.T) {
	ss := newSidecarSet("sidecar:1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.Spec.Containers = append(ss.Spec.Containers, hotSidecar("proxy", "proxy:1"))
		ss.Spec.InitContainers = append(ss.Spec.InitContainers, nativeSidecar("agent", "agent:1"))
	})
	pod := newPod("a", ss, labelled("zone", "b", "app", "web"), func(p *corev1.Pod) {
		p.Annotations[sidecar.HashAnnotation] = strings.TrimSuffix(p.Annotations[sidecar.HashAnnotation], "}") +
			`,"other":{"hash":"x","sidecarSetName":"other"}}` // not injected: not kept
		statusOf(p, "sidecar").State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "dropped"}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: sidecar.UpgradableCondition,
			Status: corev1.ConditionTrue, Reason: sidecar.UpgradableReason, Message: `{"ss":true}`})
		now := metav1.NewTime(t0)
		p.DeletionTimestamp = &now
	})
	upgradePod(pod, withVersion(ss, "sidecar:2", "h2", "nh1"), t0)
	p := NewPod(pod)

	var containers []string
	for i := range p.Containers {
		c := &p.Containers[i]
		containers = append(containers, c.Name()+"="+c.Image()+"/"+c.StatusImage())
	}
	if got, want := strings.Join(containers, " "), "app=app:1/app:1 sidecar=sidecar:2/sidecar:1 proxy-1=proxy:1/proxy:1 "+
		"proxy-2=sidecar:2/empty:1 agent=sidecar:2/agent:1"; got != want { // withVersion changes every sidecar's image
		t.Errorf("containers %s, want %s", got, want)
	}
	if c := p.Container("agent"); c == nil || !c.Init || !c.HasStatus || !c.Ready {
		t.Errorf("native sidecar %+v", c)
	}
	if c := p.Container("sidecar"); c.Waiting() != "ImagePullBackOff" || c.ImageID() != imageIDOf("sidecar:1") ||
		c.ContainerID != ContainerIDOf("containerd://a-sidecar-0") || c.ContainerID == 0 {
		t.Errorf("sidecar status %+v", c)
	}
	if h, ok := p.Hash(ss.Name); !ok || h.Hash() != "h2" {
		t.Errorf("hash entry %v %v", h.Hash(), ok)
	}
	if _, ok := p.Hash("other"); ok {
		t.Error("an entry of a SidecarSet the pod does not list as injected is kept")
	}
	if h, ok := p.HashWithoutImage(ss.Name); !ok || h.Hash() != "nh1" {
		t.Errorf("hash-without-image entry %v %v", h.Hash(), ok)
	}
	if r, ok := p.Record(ss.Name, "sidecar"); !ok || r.ContainerID != ContainerIDOf("containerd://a-sidecar-0") ||
		r.PodGeneration != 1 || r.ImageIDOnly || r.imageID.String() != imageIDOf("sidecar:1") {
		t.Errorf("record %+v %v", r, ok)
	}
	if w, _ := p.Working("proxy"); w != "proxy-2" || p.InjectedList() != ss.Name || !p.Deleting || !p.Ready || !p.Scheduled ||
		p.Phase != corev1.PodRunning || p.Upgradable() == nil || p.Upgradable().Message != `{"ss":true}` {
		t.Errorf("pod %+v", p)
	}
	if !labels.SelectorFromSet(labels.Set{"app": "web", "zone": "b"}).Matches(p.Labels) || p.Labels.Has("tier") ||
		p.Labels.Get("zone") != "b" {
		t.Errorf("labels %v", p.Labels)
	}
}

func TestNewPodRecords(t *testing.T) {
	tests := []struct {
		name      string
		record    string
		malformed bool
		imageOnly bool
	}{
		{name: "none"},
		{name: "ours", record: `{"ss":{"revision":"h","updateTimestamp":"2026-01-01T00:00:00Z","lastContainerStatuses":{"sidecar":{"imageID":"i","containerID":"c","restartCount":2}}}}`},
		{name: "openkruise", record: `{"ss":{"revision":"h","updateTimestamp":"2026-01-01T00:00:00Z","lastContainerStatuses":{"sidecar":{"imageID":"i"}}}}`, imageOnly: true},
		{name: "malformed", record: `{"ss":`, malformed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("a", ssV1, func(p *corev1.Pod) {
				if tc.record != "" {
					p.Annotations[sidecar.InPlaceUpdateStateAnnotation] = tc.record
				}
			})
			p := NewPod(pod)
			if p.RecordsMalformed != tc.malformed {
				t.Errorf("malformed %v, want %v", p.RecordsMalformed, tc.malformed)
			}
			r, ok := p.Record("ss", "sidecar")
			if want := tc.record != "" && !tc.malformed; ok != want || (ok && r.ImageIDOnly != tc.imageOnly) {
				t.Errorf("record %+v %v", r, ok)
			}
		})
	}
}

// TestNewPodSharesStrings checks that pods cached minutes apart, with collections in between,
// share one copy of the strings they repeat.
func TestNewPodSharesStrings(t *testing.T) {
	data, err := json.Marshal(newPod("a", ssV1))
	if err != nil {
		t.Fatal(err)
	}
	decode := func() *Pod {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(data, pod); err != nil {
			t.Fatal(err)
		}
		return NewPod(pod)
	}
	first := decode()
	runtime.GC()
	runtime.GC()
	second := decode()
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	a, b := first.Container("sidecar"), second.Container("sidecar")
	h1, _ := first.Hash("ss")
	h2, _ := second.Hash("ss")
	if !same(first.Namespace, second.Namespace) || !same(a.Image(), b.Image()) || !same(a.ImageID(), b.ImageID()) ||
		!same(h1.Hash(), h2.Hash()) || !same(first.Labels.Get("app"), second.Labels.Get("app")) {
		t.Error("strings repeated across pods are not shared after a collection")
	}
	runtime.KeepAlive(first)
}

func TestLabelsLookup(t *testing.T) {
	l := NewLabels(map[string]string{"b": "2", "a": "1", "c": "", "d/e": "4"})
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{{"a", "1", true}, {"b", "2", true}, {"c", "", true}, {"d/e", "4", true}, {"", "", false}, {"bb", "", false}, {"z", "", false}} {
		if v, ok := l.Lookup(tc.key); v != tc.value || ok != tc.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.key, v, ok, tc.value, tc.ok)
		}
	}
	if NewLabels(nil).Has("a") {
		t.Error("empty labels have a key")
	}
}
