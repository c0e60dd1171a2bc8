package rollout

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

// TestAssess: the plugin prints the server's verdict, the object's rollout conditions, and decides
// nothing itself: done when Ready is True at the current generation, stalled when Stalled is True,
// paused (with the command that resumes it) when Progressing is False for Paused; conditions of an
// older generation are no verdict yet.
func TestAssess(t *testing.T) {
	cond := func(typ, status, reason, message string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: message, ObservedGeneration: gen}
	}
	obj := func(gen int64, conds ...metav1.Condition) observed {
		return observed{generation: gen, status: v1alpha1.SidecarSetStatus{ObservedGeneration: gen, Conditions: conds}}
	}
	s := rolloutTarget{name: "s"}
	ns := rolloutTarget{namespaced: true, namespace: "shop", name: "s"}
	tests := []struct {
		name   string
		target rolloutTarget
		obj    observed
		want   progress
	}{
		{"done", s, obj(2, cond("Progressing", "False", "RolloutComplete", "2 of 2 pods updated", 2), cond("Ready", "True", "RolloutComplete", "", 2)),
			progress{line: "2 of 2 pods updated", done: true}},
		{"progressing", s, obj(2, cond("Progressing", "True", "RollingOut", "1 of 2 pods updated", 2), cond("Ready", "False", "RollingOut", "", 2)),
			progress{line: "1 of 2 pods updated"}},
		{"stalled", s, obj(1, cond("Progressing", "False", "PodsFailed", "0 of 1 pods updated", 1), cond("Ready", "False", "PodsFailed", "", 1),
			cond("Stalled", "True", "PodsFailed", "pods fail to run the new sidecar: ns/p: ImagePullBackOff", 1)),
			progress{line: "0 of 1 pods updated", stalled: "pods fail to run the new sidecar: ns/p: ImagePullBackOff"}},
		{"stalled before, not now", s, obj(2, cond("Progressing", "True", "RollingOut", "1 of 2 pods updated", 2), cond("Stalled", "True", "PodsFailed", "old", 1)),
			progress{line: "1 of 2 pods updated"}},
		{"paused", s, obj(1, cond("Progressing", "False", "Paused", "0 of 1 pods updated; the rollout is paused", 1)),
			progress{line: "0 of 1 pods updated; the rollout is paused", stalled: "the rollout is paused (kubectl sidecarset rollout resume s)"}},
		{"pods updated, injection moving", s, obj(2, cond("Progressing", "False", "RolloutComplete", "2 of 2 pods updated", 2),
			cond("Ready", "False", "InjectionNotReady", "the injection objects of this generation are not in place yet", 2)),
			progress{line: "2 of 2 pods updated; the injection objects of this generation are not in place yet"}},
		{"ready of the previous generation", s, obj(3, cond("Progressing", "False", "RolloutComplete", "2 of 2 pods updated", 2), cond("Ready", "True", "RolloutComplete", "", 2)),
			progress{line: `Waiting for the server to observe generation 3 of SidecarSet "s"`}},
		{"no verdict yet", s, observed{generation: 1}, progress{line: `Waiting for the server to observe generation 1 of SidecarSet "s"`}},
		{"namespaced paused", ns, obj(1, cond("Progressing", "False", "Paused", "0 of 1 pods updated", 1)),
			progress{line: "0 of 1 pods updated", stalled: "the rollout is paused (kubectl sidecarset rollout resume namespacedsidecarset/s -n shop)"}},
		{"namespaced, no verdict yet", ns, observed{generation: 1}, progress{line: "Waiting for the server to observe generation 1 of namespacedsidecarset/s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, assess(tt.target, tt.obj), cmp.AllowUnexported(progress{})); diff != "" {
				t.Errorf("assess (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseTarget: NAME is a SidecarSet; KIND/NAME takes either kind, singular or plural, with or
// without the group; any other kind is refused by name.
func TestParseTarget(t *testing.T) {
	tests := []struct {
		arg     string
		want    rolloutTarget
		wantErr string // "" when the argument is valid
	}{
		{arg: "logging", want: rolloutTarget{name: "logging"}},
		{arg: "sidecarset/logging", want: rolloutTarget{name: "logging"}},
		{arg: "sidecarsets/logging", want: rolloutTarget{name: "logging"}},
		{arg: "sidecarsets.apps.kruise.io/logging", want: rolloutTarget{name: "logging"}},
		{arg: "namespacedsidecarset/log-agent", want: rolloutTarget{namespaced: true, name: "log-agent"}},
		{arg: "namespacedsidecarsets/log-agent", want: rolloutTarget{namespaced: true, name: "log-agent"}},
		{arg: "NamespacedSidecarSet/log-agent", want: rolloutTarget{namespaced: true, name: "log-agent"}},
		{arg: "deployment/web", wantErr: `"deployment/web": unknown kind "deployment": want NAME, sidecarset/NAME or namespacedsidecarset/NAME`},
		{arg: "sidecarset/", wantErr: `"sidecarset/": want NAME`},
		{arg: "namespacedsidecarset/shop/log-agent", wantErr: `"namespacedsidecarset/shop/log-agent": want NAME`},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			got, err := parseTarget(tt.arg)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("unexpected error %v", err)
			default:
				if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(rolloutTarget{})); diff != "" {
					t.Errorf("parseTarget (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// rolloutServer is a fake clientset answering the /rollout and /revisions subresources of both
// kinds as the server would: a finished rollout, and two revisions named as the server names them.
func rolloutServer() *fake.Clientset {
	done := v1alpha1.SidecarSetStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
		{Type: "Progressing", Status: "False", Reason: "RolloutComplete", Message: "2 of 2 pods updated", ObservedGeneration: 1},
		{Type: "Ready", Status: "True", Reason: "RolloutComplete", ObservedGeneration: 1}}}
	client := fake.NewSimpleClientset(
		&v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "logging", Generation: 1}, Status: done},
		&v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log-agent", Namespace: "shop", Generation: 1}, Status: done},
		&v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log-agent", Namespace: "other", Generation: 1}})
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetSubresource() {
		case "rollout":
			return true, &v1alpha1.SidecarSetRollout{Status: v1alpha1.SidecarSetRolloutStatus{Phase: v1alpha1.RolloutDone, Summary: "2 of 2 pods updated"}}, nil
		case "revisions":
			return true, &v1alpha1.SidecarSetRevisionList{Items: []v1alpha1.SidecarSetRevision{
				{ObjectMeta: metav1.ObjectMeta{Name: "shop.log-agent-7d9f"}, Revision: 2},
				{ObjectMeta: metav1.ObjectMeta{Name: "shop.log-agent-5c4b"}, Revision: 1}}}, nil
		}
		return false, nil, nil
	})
	return client
}

// calls lists a fake's requests as "verb resource/subresource namespace/name".
func calls(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		name := ""
		switch a := a.(type) {
		case k8stesting.GetActionImpl:
			name = a.Name
		case k8stesting.CreateActionImpl:
			name = a.Name
		}
		out = append(out, fmt.Sprintf("%s %s/%s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource(), a.GetNamespace(), name))
	}
	return out
}

// TestRolloutCommands: each command reaches the subresources of the kind its argument names, a
// NamespacedSidecarSet in the command's namespace, and names the object as kubectl does; revision
// names are printed as the server gives them.
func TestRolloutCommands(t *testing.T) {
	dir := t.TempDir()
	manifest := func(name, kind, namespace string) string {
		p := filepath.Join(dir, name)
		data := fmt.Sprintf(`{"apiVersion": "apps.kruise.io/v1alpha1", "kind": %q, "metadata": {"name": "log-agent", "namespace": %q},
"spec": {"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "agent", "image": "agent:v2"}]}}`, kind, namespace)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	namespaced, other, cluster := manifest("ns.json", "NamespacedSidecarSet", "shop"), manifest("other.json", "NamespacedSidecarSet", "other"),
		manifest("cluster.json", "SidecarSet", "")
	tests := []struct {
		name      string
		args      []string
		wantCalls []string
		wantOut   []string
		wantErr   string
	}{{
		name:      "pause NAME",
		args:      []string{"rollout", "pause", "logging"},
		wantCalls: []string{"create sidecarsets/rollout /logging"},
		wantOut:   []string{"sidecarset.apps.kruise.io/logging paused\n"},
	}, {
		name:      "resume sidecarset/NAME",
		args:      []string{"rollout", "resume", "sidecarset/logging"},
		wantCalls: []string{"create sidecarsets/rollout /logging"},
		wantOut:   []string{"sidecarset.apps.kruise.io/logging resumed\n"},
	}, {
		name:      "pause namespacedsidecarset/NAME",
		args:      []string{"rollout", "pause", "namespacedsidecarset/log-agent"},
		wantCalls: []string{"create namespacedsidecarsets/rollout shop/log-agent"},
		wantOut:   []string{"namespacedsidecarset.apps.kruise.io/log-agent paused\n"},
	}, {
		name:      "status namespacedsidecarsets/NAME",
		args:      []string{"rollout", "status", "namespacedsidecarsets/log-agent"},
		wantCalls: []string{"list namespacedsidecarsets/ shop/", "list namespacedsidecarsets/ shop/", "watch namespacedsidecarsets/ shop/"},
		wantOut:   []string{"2 of 2 pods updated\nnamespacedsidecarset/log-agent successfully rolled out\n"},
	}, {
		name:      "status NAME",
		args:      []string{"rollout", "status", "logging"},
		wantCalls: []string{"list sidecarsets/ /", "list sidecarsets/ /", "watch sidecarsets/ /"},
		wantOut:   []string{`SidecarSet "logging" successfully rolled out`},
	}, {
		name:      "history namespacedsidecarset/NAME",
		args:      []string{"rollout", "history", "namespacedsidecarset/log-agent"},
		wantCalls: []string{"get namespacedsidecarsets/revisions shop/log-agent"},
		wantOut:   []string{"2         shop.log-agent-7d9f", "1         shop.log-agent-5c4b"},
	}, {
		name:      "undo namespacedsidecarset/NAME",
		args:      []string{"rollout", "undo", "namespacedsidecarset/log-agent"},
		wantCalls: []string{"get namespacedsidecarsets/revisions shop/log-agent", "create namespacedsidecarsets/rollout shop/log-agent"},
		wantOut:   []string{"namespacedsidecarset.apps.kruise.io/log-agent rolled back to revision 1 (shop.log-agent-5c4b)\n"},
	}, {
		name:    "another kind",
		args:    []string{"rollout", "pause", "deployment/web"},
		wantErr: `unknown kind "deployment": want NAME, sidecarset/NAME or namespacedsidecarset/NAME`,
	}, {
		name:      "preview namespacedsidecarset/NAME",
		args:      []string{"rollout", "preview", "namespacedsidecarset/log-agent", "-f", namespaced},
		wantCalls: []string{"create namespacedsidecarsets/rollout shop/log-agent"},
		wantOut:   []string{"Preview of namespacedsidecarset/log-agent: maxUnavailable 0, partition 0\n"},
	}, {
		name:      "preview NAME",
		args:      []string{"rollout", "preview", "log-agent", "-f", cluster},
		wantCalls: []string{"create sidecarsets/rollout /log-agent"},
		wantOut:   []string{`Preview of SidecarSet "log-agent"`},
	}, {
		name:    "preview of a manifest of the other kind",
		args:    []string{"rollout", "preview", "namespacedsidecarset/log-agent", "-f", cluster},
		wantErr: "want one NamespacedSidecarSet",
	}, {
		name:    "preview of a manifest of another namespace",
		args:    []string{"rollout", "preview", "namespacedsidecarset/log-agent", "-f", other},
		wantErr: `is of namespace "other", not "shop"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := rolloutServer()
			var out, errOut bytes.Buffer
			o := cli.NewOptions(strings.NewReader(""), &out, &errOut)
			o.NewClients = func() (*cli.Clients, error) { return &cli.Clients{SidecarSet: client, Namespace: "shop"}, nil }
			cmd := cli.NewRoot(o, NewCommand(o))
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			if diff := cmp.Diff(tt.wantCalls, calls(client)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestUndoTarget(t *testing.T) {
	revs := []v1alpha1.SidecarSetRevision{{ObjectMeta: metav1.ObjectMeta{Name: "r3"}, Revision: 3},
		{ObjectMeta: metav1.ObjectMeta{Name: "r2"}, Revision: 2}, {ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Revision: 1}}
	tests := []struct {
		to   int64
		revs []v1alpha1.SidecarSetRevision
		want string // "" for an error
	}{{0, revs, "r2"}, {1, revs, "r1"}, {7, revs, ""}, {0, revs[:1], ""}}
	for _, tt := range tests {
		got, err := undoTarget(tt.revs, tt.to)
		name := ""
		if err == nil {
			name = got.Name
		}
		if diff := cmp.Diff(tt.want, name); diff != "" {
			t.Errorf("undoTarget(to=%d) (-want +got):\n%s (err %v)", tt.to, diff, err)
		}
	}
}

// TestStatusWatch: rollout status returns once a watch event brings Ready True for the current
// generation, and exits with a timeout error when none does.
func TestStatusWatch(t *testing.T) {
	progressing := v1alpha1.SidecarSetStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
		{Type: "Progressing", Status: "True", Reason: "RollingOut", Message: "1 of 2 pods updated", ObservedGeneration: 2},
		{Type: "Ready", Status: "False", Reason: "RollingOut", ObservedGeneration: 2}}}
	done := v1alpha1.SidecarSetStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
		{Type: "Progressing", Status: "False", Reason: "RolloutComplete", Message: "2 of 2 pods updated", ObservedGeneration: 2},
		{Type: "Ready", Status: "True", Reason: "RolloutComplete", ObservedGeneration: 2}}}
	for _, finish := range []bool{true, false} {
		t.Run(fmt.Sprintf("finish=%v", finish), func(t *testing.T) {
			ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "logging", Generation: 2}, Status: progressing}
			client := fake.NewSimpleClientset(ss)
			var out bytes.Buffer
			o := cli.NewOptions(strings.NewReader(""), &out, &bytes.Buffer{})
			o.NewClients = func() (*cli.Clients, error) { return &cli.Clients{SidecarSet: client}, nil }
			if finish {
				go func() {
					time.Sleep(200 * time.Millisecond)
					next := ss.DeepCopy()
					next.Status = done
					_, _ = client.AppsV1alpha1().SidecarSets().UpdateStatus(context.Background(), next, metav1.UpdateOptions{})
				}()
			}
			start := time.Now()
			err := runStatus(context.Background(), o, "logging", true, 2*time.Second)
			switch {
			case finish && err != nil:
				t.Fatalf("%v\n%s", err, out.String())
			case finish && time.Since(start) > time.Second:
				t.Errorf("returned after %s, want at the update", time.Since(start))
			case finish:
				if want := "1 of 2 pods updated\n2 of 2 pods updated\nSidecarSet \"logging\" successfully rolled out\n"; out.String() != want {
					t.Errorf("output %q, want %q", out.String(), want)
				}
			case err == nil || !strings.Contains(err.Error(), "timed out waiting for the rollout"):
				t.Errorf("error %v, want a timeout", err)
			}
		})
	}
}
