package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateProbesAndLifecycle forbids probes and lifecycle hooks on init containers that run to
// completion and validates them elsewhere.
func validateProbesAndLifecycle(c *corev1.Container, kind containerKind, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if kind == initContainer {
		const msg = "may not be set for init containers without restartPolicy=Always"
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil},
		} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(path.Child(f.name), msg))
			}
		}
		return allErrs
	}
	allErrs = append(allErrs, validateProbe(c.LivenessProbe, true, path.Child("livenessProbe"))...)
	allErrs = append(allErrs, validateProbe(c.ReadinessProbe, false, path.Child("readinessProbe"))...)
	allErrs = append(allErrs, validateProbe(c.StartupProbe, true, path.Child("startupProbe"))...)
	if l := c.Lifecycle; l != nil {
		allErrs = append(allErrs, validateLifecycleHandler(l.PostStart, path.Child("lifecycle", "postStart"))...)
		allErrs = append(allErrs, validateLifecycleHandler(l.PreStop, path.Child("lifecycle", "preStop"))...)
	}
	return allErrs
}

// validateProbe requires one handler and non-negative timings; liveness and startup probes must
// succeed once (0 stands for the default 1).
func validateProbe(pr *corev1.Probe, succeedOnce bool, path *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	h := pr.ProbeHandler
	allErrs := validateHandler(path, h.Exec, h.HTTPGet, h.TCPSocket, h.GRPC, nil)
	allErrs = append(allErrs, validateNonnegative(pr.InitialDelaySeconds, path.Child("initialDelaySeconds"))...)
	allErrs = append(allErrs, validateNonnegative(pr.TimeoutSeconds, path.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(pr.PeriodSeconds, path.Child("periodSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(pr.SuccessThreshold, path.Child("successThreshold"))...)
	allErrs = append(allErrs, validateNonnegative(pr.FailureThreshold, path.Child("failureThreshold"))...)
	if succeedOnce && pr.SuccessThreshold > 1 {
		allErrs = append(allErrs, field.Invalid(path.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		allErrs = append(allErrs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return allErrs
}

// validateLifecycleHandler requires one action in a postStart or preStop hook.
func validateLifecycleHandler(h *corev1.LifecycleHandler, path *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	allErrs := validateHandler(path, h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep)
	if h.Sleep != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(h.Sleep.Seconds, path.Child("sleep", "seconds"))...)
	}
	return allErrs
}

// validateHandler requires exactly one of the given actions and validates it.
func validateHandler(path *field.Path, exec *corev1.ExecAction, httpGet *corev1.HTTPGetAction,
	tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction, sleep *corev1.SleepAction) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	if exec != nil {
		n++
		if len(exec.Command) == 0 {
			allErrs = append(allErrs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if httpGet != nil {
		n++
		allErrs = append(allErrs, validateHTTPGet(httpGet, path.Child("httpGet"))...)
	}
	if tcp != nil {
		n++
		allErrs = append(allErrs, validatePortNumOrName(tcp.Port, path.Child("tcpSocket", "port"))...)
	}
	if grpc != nil {
		n++
		allErrs = append(allErrs, validatePortNum(int(grpc.Port), true, path.Child("grpc", "port"))...)
	}
	if sleep != nil {
		n++
	}
	switch {
	case n == 0:
		allErrs = append(allErrs, field.Required(path, "must specify a handler type"))
	case n > 1:
		allErrs = append(allErrs, field.Forbidden(path, "may not specify more than 1 handler type"))
	}
	return allErrs
}

// validateHTTPGet validates the port, scheme and header names of an HTTP action.
func validateHTTPGet(a *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	allErrs := validatePortNumOrName(a.Port, path.Child("port"))
	if a.Scheme != "" {
		allErrs = append(allErrs, validateEnum(a.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS},
			path.Child("scheme"))...)
	}
	for i, h := range a.HTTPHeaders {
		for _, msg := range utilvalidation.IsHTTPHeaderName(h.Name) {
			allErrs = append(allErrs, field.Invalid(path.Child("httpHeaders").Index(i).Child("name"), h.Name, msg))
		}
	}
	return allErrs
}
