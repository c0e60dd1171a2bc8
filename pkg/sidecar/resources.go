package sidecar

import (
	"errors"
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/resourceexpr"
)

// ResourceEvaluator evaluates a resourcesPolicy expression with variable ("cpu" or "memory")
// bound to value and returns a non-negative quantity.
type ResourceEvaluator func(expr, variable string, value resource.Quantity) (resource.Quantity, error)

// EvaluateResourceExpr is the default ResourceEvaluator, backed by package resourceexpr.
func EvaluateResourceExpr(expr, variable string, value resource.Quantity) (resource.Quantity, error) {
	e, err := resourceexpr.Parse(expr)
	if err != nil {
		return resource.Quantity{}, err
	}
	return e.Eval(variable, value)
}

// memoryWord decides which variable an expression binds, as OpenKruise does: memory when the
// expression mentions the word, cpu otherwise (constants therefore bind cpu).
var memoryWord = regexp.MustCompile(`\bmemory\b`)

// PolicyResources evaluates a sidecar's resourcesPolicy against targets, the pod's own containers
// and native sidecars that are not sidecars of any matched SidecarSet (OpenKruise §4.8). The
// result replaces the sidecar's resources, at injection and at an in-place resize alike.
func PolicyResources(policy *v1alpha1.ResourcesPolicy, targets []*corev1.Container, eval ResourceEvaluator) (*corev1.ResourceRequirements, error) {
	regex := ptr.Deref(policy.TargetContainersNameRegex, ".*")
	pattern, err := regexp.Compile(regex)
	if err != nil {
		return nil, fmt.Errorf("targetContainersNameRegex: invalid regex pattern %q: %w", regex, err)
	}
	matched := make([]*corev1.Container, 0, len(targets))
	for _, c := range targets {
		if pattern.MatchString(c.Name) {
			matched = append(matched, c)
		}
	}
	if len(matched) == 0 {
		return nil, fmt.Errorf("targetContainersNameRegex: no containers match the regex pattern %q", regex)
	}
	limits, requests := aggregate(matched, policy.TargetContainersMode)
	out := &corev1.ResourceRequirements{}
	if l := policy.ResourcesExpr.Limits; l != nil {
		list := corev1.ResourceList{}
		for _, x := range []struct {
			name corev1.ResourceName
			expr string
		}{{corev1.ResourceCPU, l.CPU}, {corev1.ResourceMemory, l.Memory}} {
			agg, ok := limits[x.name]
			if x.expr == "" || !ok {
				continue // no expression, or a target is unlimited: leave the limit unset
			}
			q, err := evalExpr(eval, x.expr, agg)
			if err != nil {
				return nil, fmt.Errorf("resourcesExpr.limits.%s: %w", x.name, err)
			}
			list[x.name] = q
		}
		if len(list) > 0 {
			out.Limits = list
		}
	}
	if r := policy.ResourcesExpr.Requests; r != nil {
		list := corev1.ResourceList{}
		for _, x := range []struct {
			name corev1.ResourceName
			expr string
		}{{corev1.ResourceCPU, r.CPU}, {corev1.ResourceMemory, r.Memory}} {
			if x.expr == "" {
				continue
			}
			q, err := evalExpr(eval, x.expr, requests[x.name])
			if err != nil {
				return nil, fmt.Errorf("resourcesExpr.requests.%s: %w", x.name, err)
			}
			list[x.name] = q
		}
		if len(list) > 0 {
			out.Requests = list
		}
	}
	return out, nil
}

func evalExpr(eval ResourceEvaluator, expr string, value resource.Quantity) (q resource.Quantity, err error) {
	variable := resourceexpr.CPU
	if memoryWord.MatchString(expr) {
		variable = resourceexpr.Memory
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("evaluating %q: %v", expr, r)
		}
	}()
	q, err = eval(expr, variable, value)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("evaluating %q: %w", expr, err)
	}
	if q.Sign() < 0 {
		return resource.Quantity{}, errors.New("calculation result is negative")
	}
	return q, nil
}

// aggregate sums or maximises the cpu and memory of the targets. A limit is present only when
// every target has it (otherwise the aggregate is unlimited); a missing request counts as zero and
// a zero sum is left absent.
func aggregate(targets []*corev1.Container, mode v1alpha1.TargetContainersModeType) (limits, requests corev1.ResourceList) {
	limits, requests = corev1.ResourceList{}, corev1.ResourceList{}
	if mode != v1alpha1.TargetContainersModeSum && mode != v1alpha1.TargetContainersModeMax {
		return limits, requests
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		limit, allLimited := resource.Quantity{}, true
		request := resource.Quantity{}
		for i, c := range targets {
			if l, ok := c.Resources.Limits[name]; ok {
				limit = combine(mode, limit, l, i == 0)
			} else {
				allLimited = false
			}
			if r, ok := c.Resources.Requests[name]; ok {
				request = combine(mode, request, r, false)
			}
		}
		if allLimited {
			limits[name] = limit
		}
		if !request.IsZero() {
			requests[name] = request
		}
	}
	return limits, requests
}

func combine(mode v1alpha1.TargetContainersModeType, acc, q resource.Quantity, first bool) resource.Quantity {
	if mode == v1alpha1.TargetContainersModeSum {
		acc.Add(q)
		return acc
	}
	if first || q.Cmp(acc) > 0 {
		return q.DeepCopy()
	}
	return acc
}
