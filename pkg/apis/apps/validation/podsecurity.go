package validation

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

var (
	evaluatorOnce sync.Once
	evaluator     psapolicy.Evaluator
)

// PodSecurityViolations returns how the sidecars of ss break the Pod Security Standard "baseline"
// (privileged, host ports, added capabilities, hostPath volumes, ...), as kube-apiserver's own
// checks (k8s.io/pod-security-admission) word it; none when they keep to it. Every pod they go into
// is then refused by kube-apiserver in a namespace that enforces baseline or restricted, with an
// error about containers its owner never wrote. The sidecars alone (with their volumes) are
// checked: a baseline violation of theirs is one of every pod they go into. Restricted is not
// checked: the pod's own securityContext may satisfy it.
func PodSecurityViolations(ss *apps.SidecarSet) []string {
	return SidecarPodSecurityViolations(sidecarContainers(ss.Spec.InitContainers), sidecarContainers(ss.Spec.Containers), ss.Spec.Volumes)
}

// StoredPodSecurityViolations is PodSecurityViolations of a SidecarSet as stored and served
// (v1alpha1), for the injection paths.
func StoredPodSecurityViolations(ss *v1alpha1.SidecarSet) []string {
	var init, containers []corev1.Container
	for i := range ss.Spec.InitContainers {
		init = append(init, ss.Spec.InitContainers[i].Container)
	}
	for i := range ss.Spec.Containers {
		containers = append(containers, ss.Spec.Containers[i].Container)
	}
	return SidecarPodSecurityViolations(init, containers, ss.Spec.Volumes)
}

func sidecarContainers(scs []apps.SidecarContainer) []corev1.Container {
	out := make([]corev1.Container, 0, len(scs))
	for i := range scs {
		out = append(out, scs[i].Container)
	}
	return out
}

// SidecarPodSecurityViolations is PodSecurityViolations of the given sidecars and volumes (of any
// version of a SidecarSet, or of a revision).
func SidecarPodSecurityViolations(initContainers, containers []corev1.Container, volumes []corev1.Volume) []string {
	evaluatorOnce.Do(func() {
		var err error
		if evaluator, err = psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil); err != nil {
			panic(err) // the library's own checks
		}
	})
	if len(containers)+len(initContainers) == 0 {
		return nil
	}
	spec := &corev1.PodSpec{Volumes: volumes, InitContainers: initContainers, Containers: containers}
	lv := psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()}
	res := psapolicy.AggregateCheckResults(evaluator.EvaluatePod(lv, &metav1.ObjectMeta{}, spec))
	if res.Allowed {
		return nil
	}
	var reasons []string
	for i, r := range res.ForbiddenReasons {
		if d := res.ForbiddenDetails[i]; d != "" {
			r += " (" + d + ")"
		}
		reasons = append(reasons, r)
	}
	return reasons
}

// EnforcesBaseline reports whether a namespace with these labels refuses pods that break the
// Pod Security Standard baseline: it enforces baseline or restricted.
func EnforcesBaseline(nsLabels map[string]string) bool {
	level, err := psaapi.ParseLevel(nsLabels[psaapi.EnforceLevelLabel])
	return err == nil && level != psaapi.LevelPrivileged
}

// PodSecurityMessage words the violations for the SidecarSet's author: where pods would be
// refused (the namespaces named, or in general when none it selects enforces baseline now).
func PodSecurityMessage(violations, namespaces []string) string {
	where := "in namespaces that enforce baseline or restricted (label " + psaapi.EnforceLevelLabel + ")"
	if len(namespaces) > 0 {
		shown := namespaces
		if len(shown) > 10 {
			shown = append(append([]string(nil), shown[:10]...), fmt.Sprintf("and %d more", len(namespaces)-10))
		}
		where = "in the namespaces it selects that enforce baseline or restricted: " + strings.Join(shown, ", ")
	}
	return fmt.Sprintf("the sidecars break the Pod Security Standard \"baseline\": %s; every pod this SidecarSet injects is refused %s",
		strings.Join(violations, "; "), where)
}
