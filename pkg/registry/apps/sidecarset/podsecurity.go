package sidecarset

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

// podSecurityWarnings warn the author of a SidecarSet whose sidecars break the Pod Security
// Standard "baseline" (privileged, host ports, added capabilities, hostPath volumes, ...): every
// pod it injects is then refused by kube-apiserver in a namespace that enforces baseline or
// restricted, with an error about containers its owner never wrote. The sidecars alone (with their
// volumes) are checked, with kube-apiserver's own checks: a baseline violation of theirs is one of
// every pod they go into. Restricted is not checked: the pod's own securityContext may satisfy it.
func podSecurityWarnings(ss *apps.SidecarSet) []string {
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
	return []string{fmt.Sprintf("the sidecars break the Pod Security Standard \"baseline\": %s; every pod this SidecarSet injects is refused in namespaces that enforce baseline or restricted (label pod-security.kubernetes.io/enforce)",
		strings.Join(reasons, "; "))}
}
