package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// Key names an object of kind k for Input.Since, the Tracker and Condition.
func Key(k Kind, name string) string { return string(k) + "/" + name }

// PolicyKey, BindingKey and WebhooksKey are the keys of an owned policy, binding and webhook
// configuration.
func PolicyKey(name string) string   { return Key(Policy, name) }
func BindingKey(name string) string  { return Key(Binding, name) }
func WebhooksKey(name string) string { return Key(Webhooks, name) }

// SelectiveWebhooksKey is the key of the selective webhooks of an active webhook configuration
// (those that are not intake webhooks), observed apart: the intake's holds are written often, and
// what the intake waits for is the selective webhooks alone.
func SelectiveWebhooksKey(name string) string { return Key(Webhooks, name) + "/selective" }

// Observation is one object as gathered, for the Tracker.
type Observation struct {
	Key             string
	ResourceVersion string
	// LastWrite, when set, is when the object was last written (see lastWrite); a first look
	// trusts it. Zero: a first look counts the object as written just now.
	LastWrite time.Time
}

// Observations returns the observations of the owned policies, bindings and active webhook
// configuration (nil: none). On a first look (a new leader, a restart) a policy or binding is as
// it was last written, by the previous leader, and kube-apiserver has had since then to load it;
// the webhook configuration counts as written just now, so that a new leader withdraws a policy
// only a full grace period after its first look.
func Observations(now time.Time, policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding,
	active *admissionregistrationv1.MutatingWebhookConfiguration,
) []Observation {
	out := make([]Observation, 0, len(policies)+len(bindings)+1)
	for _, p := range policies {
		out = append(out, Observation{Key: PolicyKey(p.Name), ResourceVersion: p.ResourceVersion, LastWrite: lastWrite(p, now)})
	}
	for _, b := range bindings {
		out = append(out, Observation{Key: BindingKey(b.Name), ResourceVersion: b.ResourceVersion, LastWrite: lastWrite(b, now)})
	}
	if active != nil {
		out = append(out, Observation{Key: WebhooksKey(active.Name), ResourceVersion: active.ResourceVersion},
			Observation{Key: SelectiveWebhooksKey(active.Name), ResourceVersion: selectiveDigest(active.Webhooks)})
	}
	return out
}

// selectiveDigest stands for the selective webhooks among webhooks: it changes when they do.
func selectiveDigest(webhooks []admissionregistrationv1.MutatingWebhook) string {
	selective, _ := webhookconfig.SplitIntake(webhooks)
	raw, err := json.Marshal(selective)
	if err != nil {
		return "" // a webhook JSON cannot encode: never the case for one read from kube-apiserver
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// Tracker remembers since when each observed object has been at its current resourceVersion, as
// far as this controller has seen. The zero Tracker has not looked yet. It reads no clock: the
// time is passed in.
type Tracker struct {
	seen map[string]seen // nil until the first look
}

type seen struct {
	resourceVersion string
	at              time.Time
}

// Observe records the objects gathered at now, forgets those no longer there, and returns since
// when each has been as it is: since its first sight at this resourceVersion; on the first look,
// its LastWrite when set. Once the controller has looked, even at nothing, what appears later was
// written since, perhaps by itself a moment ago.
func (t *Tracker) Observe(now time.Time, objs []Observation) map[string]time.Time {
	out := make(map[string]time.Time, len(objs))
	current := make(map[string]seen, len(objs))
	for _, o := range objs {
		s, ok := t.seen[o.Key]
		switch {
		case ok && s.resourceVersion == o.ResourceVersion:
		case t.seen == nil && !o.LastWrite.IsZero():
			s = seen{resourceVersion: o.ResourceVersion, at: o.LastWrite}
		default:
			s = seen{resourceVersion: o.ResourceVersion, at: now}
		}
		current[o.Key] = s
		out[o.Key] = s.at
	}
	t.seen = current
	return out
}

// Wrote records that the controller wrote the object of key at resourceVersion rv at.
func (t *Tracker) Wrote(key, rv string, at time.Time) {
	if t.seen == nil {
		t.seen = map[string]seen{}
	}
	t.seen[key] = seen{resourceVersion: rv, at: at}
}

// Forget drops what the tracker knows of the object of key (a write of it failed).
func (t *Tracker) Forget(key string) { delete(t.seen, key) }

// lastWrite is when o was last written, as its managed fields record (its creation without them),
// rounded up to the next second (both are stored in whole seconds), and not later than now.
func lastWrite(o metav1.Object, now time.Time) time.Time {
	at := o.GetCreationTimestamp().Time
	for _, m := range o.GetManagedFields() {
		if m.Time != nil && m.Time.After(at) {
			at = m.Time.Time
		}
	}
	if at.IsZero() {
		return now
	}
	if at = at.Truncate(time.Second).Add(time.Second); at.After(now) {
		return now
	}
	return at
}

// sameObject reports whether an existing object already has the wanted labels, annotations,
// owner references and spec. Specs are compared as JSON (apps.SameJSON; the compiled specs set
// every field kube-apiserver defaults).
func sameObject(have, want metav1.Object, haveSpec, wantSpec any) bool {
	for k, v := range want.GetLabels() {
		if have.GetLabels()[k] != v {
			return false
		}
	}
	if !equality.Semantic.DeepEqual(have.GetOwnerReferences(), want.GetOwnerReferences()) {
		return false
	}
	for k, v := range want.GetAnnotations() {
		if have.GetAnnotations()[k] != v {
			return false
		}
	}
	return apps.SameJSON(haveSpec, wantSpec)
}
