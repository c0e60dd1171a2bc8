package plan

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// The intake (see injectionsync.Intake) has kube-apiserver send pods to the server while
// SidecarSet writes are under way, before the selective webhooks route their pods. Its state lives
// in the intake webhook configuration (IntakeWebhooks; the active one, before this version), so
// that every replica and the leader agree and a restart loses nothing: holds, each until a time, for every pod (a write of a cluster SidecarSet whose
// selector requires no label: apps.IntakeOpenedAnnotation, apps.IntakeUntilAnnotation) or for
// scopes (apps.IntakeNamespacesAnnotation, apps.IntakeScopes): a namespace (a
// NamespacedSidecarSet's write) or a label key every version written of a cluster SidecarSet
// requires (the pods without it are none of its pods). The intake webhooks are a function of the
// holds (IntakeState.Webhooks): every pod while a cluster hold lasts, else the pods of the held
// namespaces and those with a held label key.
//
// Invariants: a hold is only added or extended by a replica's write and dropped by the leader
// once its time, plus the load delay, has passed; every write of the configuration covers every
// hold it keeps, so that a namespace once covered stays covered until its hold is dropped,
// through any change from every namespace to some (kube-apiserver swaps configurations whole).
// Each hold records since when its scope has been covered without interruption (Opened), so a
// namespace already covered by intake webhooks kube-apiserver has had LoadDelay to load waits no
// more.

// MaxIntakeNamespaces bounds the namespaces held at once: a write that would hold one more opens
// the intake for every namespace instead, until the last of their holds. Writes across many
// namespaces (a GitOps sync of every tenant's NamespacedSidecarSets) then wait the load delay once,
// not once per namespace (250 namespaces of a bulk apply waited 250 s), and the configuration and
// its annotation stay small. One namespace's editor cannot cause it: it takes writes in three
// namespaces within a hold.
const MaxIntakeNamespaces = 2

// MaxIntakeLabels bounds the label keys held at once (a set of intake webhooks each): one more
// opens the intake for every namespace instead, until the last of their holds.
const MaxIntakeLabels = apps.MaxWebhookLabelKeys

// IntakeHold is one hold of the intake.
type IntakeHold struct {
	// Opened is since when the intake webhooks have covered the hold's namespaces without
	// interruption.
	Opened time.Time `json:"opened"`
	// Until is when the hold ends.
	Until time.Time `json:"until"`
}

// IntakeState is the intake's holds as the intake configuration records them.
type IntakeState struct {
	// Cluster, when set, holds every namespace.
	Cluster *IntakeHold
	// Namespaces hold their scope each: a namespace, or a label key (apps.IntakeLabelScope).
	Namespaces map[string]IntakeHold
	// Stale reports that the intake webhooks in place are not those of the holds (written by
	// another version, or from another template): the holds' Opened times are not to be trusted.
	Stale bool
}

// ReadIntake returns the intake state of a configuration (nil: none), whose intake webhooks are
// rendered from template with excluded (IntakeState.Webhooks). Holds without intake webhooks in
// place are none.
func ReadIntake(cfg *admissionregistrationv1.MutatingWebhookConfiguration, template []admissionregistrationv1.MutatingWebhook, excluded []string) IntakeState {
	if cfg == nil {
		return IntakeState{}
	}
	_, open := webhookconfig.SplitIntake(cfg.Webhooks)
	if len(open) == 0 {
		return IntakeState{}
	}
	var s IntakeState
	opened, err1 := time.Parse(time.RFC3339Nano, cfg.Annotations[apps.IntakeOpenedAnnotation])
	until, err2 := time.Parse(time.RFC3339Nano, cfg.Annotations[apps.IntakeUntilAnnotation])
	if err1 == nil && err2 == nil {
		s.Cluster = &IntakeHold{Opened: opened, Until: until}
	}
	if raw, ok := cfg.Annotations[apps.IntakeNamespacesAnnotation]; ok {
		if err := json.Unmarshal([]byte(raw), &s.Namespaces); err != nil {
			s.Namespaces = nil
		}
	}
	s.Stale = !equality.Semantic.DeepEqual(open, s.Webhooks(template, excluded))
	return s
}

// Empty reports whether s holds nothing.
func (s IntakeState) Empty() bool { return s.Cluster == nil && len(s.Namespaces) == 0 }

// Webhooks returns the intake webhooks of s (webhookconfig.IntakeWebhooksFor): every namespace's pods
// while a cluster hold lasts, else those of the held namespaces and those with a held label key;
// none without holds.
func (s IntakeState) Webhooks(template []admissionregistrationv1.MutatingWebhook, excluded []string) []admissionregistrationv1.MutatingWebhook {
	if s.Cluster != nil {
		return webhookconfig.IntakeWebhooks(template, excluded, nil)
	}
	var namespaces []string
	var matches []webhookconfig.WebhookMatch
	for _, scope := range slices.Sorted(maps.Keys(s.Namespaces)) {
		if key, ok := strings.CutPrefix(scope, apps.IntakeLabelScope); ok {
			matches = append(matches, webhookconfig.WebhookMatch{ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: key, Operator: metav1.LabelSelectorOpExists}}}})
		} else {
			namespaces = append(namespaces, scope)
		}
	}
	if len(namespaces) > 0 {
		matches = append([]webhookconfig.WebhookMatch{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: namespaces}}}}}, matches...)
	}
	if len(matches) == 0 {
		return nil
	}
	return webhookconfig.IntakeWebhooksFor(template, excluded, matches)
}

// Annotate records s in the annotations of m (removing those of the holds s lacks).
func (s IntakeState) Annotate(m *metav1.ObjectMeta) {
	delete(m.Annotations, apps.IntakeOpenedAnnotation)
	delete(m.Annotations, apps.IntakeUntilAnnotation)
	delete(m.Annotations, apps.IntakeNamespacesAnnotation)
	if s.Cluster != nil {
		metav1.SetMetaDataAnnotation(m, apps.IntakeOpenedAnnotation, s.Cluster.Opened.UTC().Format(time.RFC3339Nano))
		metav1.SetMetaDataAnnotation(m, apps.IntakeUntilAnnotation, s.Cluster.Until.UTC().Format(time.RFC3339Nano))
	}
	if len(s.Namespaces) > 0 {
		utc := make(map[string]IntakeHold, len(s.Namespaces))
		for ns, h := range s.Namespaces {
			utc[ns] = IntakeHold{Opened: h.Opened.UTC(), Until: h.Until.UTC()}
		}
		raw, _ := json.Marshal(utc) // map keys in order: the same holds give the same annotation
		metav1.SetMetaDataAnnotation(m, apps.IntakeNamespacesAnnotation, string(raw))
	}
}

// Until returns when the hold that covers namespace ("": every namespace) ends, the later of the
// cluster hold and the namespace's own; zero when none covers it.
func (s IntakeState) Until(namespace string) time.Time {
	var until time.Time
	if s.Cluster != nil {
		until = s.Cluster.Until
	}
	if h, ok := s.Namespaces[namespace]; ok && namespace != "" && h.Until.After(until) {
		until = h.Until
	}
	return until
}

// CoveredSince returns since when the intake webhooks of s have covered namespace ("": every
// namespace) without interruption, as far as s records; false when they do not, or when s is
// stale.
func (s IntakeState) CoveredSince(namespace string) (time.Time, bool) {
	if s.Stale {
		return time.Time{}, false
	}
	var since time.Time
	if s.Cluster != nil {
		since = s.Cluster.Opened
	}
	if h, ok := s.Namespaces[namespace]; ok && namespace != "" && (since.IsZero() || h.Opened.Before(since)) {
		since = h.Opened
	}
	return since, !since.IsZero()
}

// Open returns the state after a write that changes what a SidecarSet of namespace ("": a cluster
// SidecarSet, every namespace) injects, at now, and whether the configuration must be written:
// nothing when a hold covering namespace lasts at least hold/2 more; otherwise that hold set to
// now+hold, its Opened kept from the coverage already in place, or now. A namespace beyond
// MaxIntakeNamespaces turns the holds into one cluster hold until the last of them. A stale state
// is written again, every hold opened now (the webhooks in place are replaced).
func (s IntakeState) Open(namespace string, now time.Time, hold time.Duration) (IntakeState, bool) {
	if !s.Stale && s.Until(namespace).Sub(now) >= hold/2 {
		return s, false
	}
	next := s.clone()
	if next.Stale {
		next = next.openedAt(now)
	}
	until := now.Add(hold)
	if namespace == "" {
		h := IntakeHold{Opened: now, Until: until}
		if c := next.Cluster; c != nil {
			h.Opened, h.Until = c.Opened, later(c.Until, until)
		}
		next.Cluster = &h
		return next, true
	}
	h, ok := next.Namespaces[namespace]
	if !ok {
		h.Opened = now
	}
	if since, ok := next.CoveredSince(namespace); ok && since.Before(h.Opened) {
		h.Opened = since // covered through the cluster hold, and after it by this one
	}
	h.Until = later(h.Until, until)
	if next.Namespaces == nil {
		next.Namespaces = map[string]IntakeHold{}
	}
	next.Namespaces[namespace] = h
	if labels := next.labelScopes(); len(next.Namespaces)-labels > MaxIntakeNamespaces || labels > MaxIntakeLabels {
		next = next.folded(now)
	}
	return next, true
}

// labelScopes is the number of label keys s holds.
func (s IntakeState) labelScopes() int {
	n := 0
	for scope := range s.Namespaces {
		if strings.HasPrefix(scope, apps.IntakeLabelScope) {
			n++
		}
	}
	return n
}

// folded returns s with its namespace holds turned into one cluster hold until the last of them.
func (s IntakeState) folded(now time.Time) IntakeState {
	c := IntakeHold{Opened: now}
	if s.Cluster != nil {
		c = *s.Cluster
	}
	for _, h := range s.Namespaces {
		c.Until = later(c.Until, h.Until)
	}
	return IntakeState{Cluster: &c}
}

// openedAt returns s with every hold opened at now and not stale: the state of a write that puts
// its webhooks in place.
func (s IntakeState) openedAt(now time.Time) IntakeState {
	out := s.clone()
	out.Stale = false
	if out.Cluster != nil {
		out.Cluster.Opened = now
	}
	for ns, h := range out.Namespaces {
		h.Opened = now
		out.Namespaces[ns] = h
	}
	return out
}

// Expire returns s without the holds whose time, plus loadDelay, has passed at now (a write
// admitted before the end of a hold may still be reaching the leader's informer), and how long
// until the next of the others does (zero when none is left).
func (s IntakeState) Expire(now time.Time, loadDelay time.Duration) (IntakeState, time.Duration) {
	out := IntakeState{Stale: s.Stale}
	var next time.Duration
	keep := func(h IntakeHold) bool {
		wait := h.Until.Add(loadDelay).Sub(now)
		if wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
		return wait > 0
	}
	if s.Cluster != nil && keep(*s.Cluster) {
		c := *s.Cluster
		out.Cluster = &c
	}
	for ns, h := range s.Namespaces {
		if keep(h) {
			if out.Namespaces == nil {
				out.Namespaces = map[string]IntakeHold{}
			}
			out.Namespaces[ns] = h
		}
	}
	return out, next
}

// holds is the number of holds of s.
func (s IntakeState) holds() int {
	n := len(s.Namespaces)
	if s.Cluster != nil {
		n++
	}
	return n
}

func (s IntakeState) clone() IntakeState {
	out := IntakeState{Stale: s.Stale, Namespaces: maps.Clone(s.Namespaces)}
	if s.Cluster != nil {
		c := *s.Cluster
		out.Cluster = &c
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
