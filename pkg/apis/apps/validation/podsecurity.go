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
	evaluatorOnce.Do(func() {
		var err error
		if evaluator, err = psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil); err != nil {
			panic(err) // the library's own checks
		}
	})
	spec := &corev1.PodSpec{Volumes: ss.Spec.Volumes}
	for i := range ss.Spec.InitContainers {
		spec.InitContainers = append(spec.InitContainers, ss.Spec.InitContainers[i].Container)
	}
	for i := range ss.Spec.Containers {
		spec.Containers = append(spec.Containers, ss.Spec.Containers[i].Container)
	}
	if len(spec.Containers)+len(spec.InitContainers) == 0 {
		return nil
	}
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
