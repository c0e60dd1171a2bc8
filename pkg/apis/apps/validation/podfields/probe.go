package podfields

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var schemes = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}

// validateProbesAndLifecycle forbids probes and lifecycle hooks on init containers that run to
// completion and validates them elsewhere.
func validateProbesAndLifecycle(c *corev1.Container, kind containerKind, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	lifecycle := withoutStopSignal(c.Lifecycle)
	if kind == initContainer {
		const msg = "may not be set for init containers without restartPolicy=Always"
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"lifecycle", lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil},
		} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(path.Child(f.name), msg))
			}
		}
		return allErrs
	}
	if l := lifecycle; l != nil {
		allErrs = append(allErrs, validateLifecycleHandler(l.PostStart, path.Child("lifecycle", "postStart"))...)
		allErrs = append(allErrs, validateLifecycleHandler(l.PreStop, path.Child("lifecycle", "preStop"))...)
	}
	allErrs = append(allErrs, validateProbe(c.LivenessProbe, true, path.Child("livenessProbe"))...)
	allErrs = append(allErrs, validateProbe(c.ReadinessProbe, false, path.Child("readinessProbe"))...)
	return append(allErrs, validateProbe(c.StartupProbe, true, path.Child("startupProbe"))...)
}

// withoutStopSignal returns the lifecycle kube-apiserver 1.36 validates: without its stop signal,
// which it drops while the ContainerStopSignals feature is off (the default), and nil when
// nothing else is set. With the feature on, the signal is checked against the pod's os.
func withoutStopSignal(l *corev1.Lifecycle) *corev1.Lifecycle {
	if l == nil || l.StopSignal == nil {
		return l
	}
	if l.PostStart == nil && l.PreStop == nil {
		return nil
	}
	return &corev1.Lifecycle{PostStart: l.PostStart, PreStop: l.PreStop}
}

// validateProbe requires one handler and non-negative timings; liveness and startup probes must
// succeed once (0 stands for the default 1) and readiness probes take no grace period.
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
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		allErrs = append(allErrs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	if succeedOnce && pr.SuccessThreshold != 0 && pr.SuccessThreshold != 1 {
		allErrs = append(allErrs, field.Invalid(path.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
	}
	if !succeedOnce && pr.TerminationGracePeriodSeconds != nil {
		allErrs = append(allErrs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *pr.TerminationGracePeriodSeconds,
			"must not be set for readinessProbes"))
	}
	return allErrs
}

// validateLifecycleHandler requires one action in a postStart or preStop hook. A sleep must not
// be negative; that it ends within the pod's terminationGracePeriodSeconds is the pod's problem.
func validateLifecycleHandler(h *corev1.LifecycleHandler, path *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	return validateHandler(path, h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep)
}

// validateHandler requires exactly one of the given actions and validates the first one set, as
// kube-apiserver does (each further one is forbidden).
func validateHandler(path *field.Path, exec *corev1.ExecAction, httpGet *corev1.HTTPGetAction,
	tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction, sleep *corev1.SleepAction) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	handle := func(set bool, name string, validate func(*field.Path) field.ErrorList) {
		switch {
		case !set:
		case n > 0:
			allErrs = append(allErrs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
		default:
			n++
			allErrs = append(allErrs, validate(path.Child(name))...)
		}
	}
	handle(exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	handle(httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGet(httpGet, p) })
	handle(tcp != nil, "tcpSocket", func(p *field.Path) field.ErrorList { return validatePortNumOrName(tcp.Port, p.Child("port")) })
	handle(grpc != nil, "grpc", func(p *field.Path) field.ErrorList { return validatePortNum(int(grpc.Port), p.Child("port")) })
	handle(sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		// kube-apiserver's words, without the pod's terminationGracePeriodSeconds it compares with.
		if sleep.Seconds < 0 {
			return field.ErrorList{field.Invalid(p.Child("seconds"), sleep.Seconds, "must be non-negative")}
		}
		return nil
	})
	if n == 0 {
		allErrs = append(allErrs, field.Required(path, "must specify a handler type"))
	}
	return allErrs
}

// validateHTTPGet validates the path, port, scheme and header names of an HTTP action (path and
// scheme are defaulted).
func validateHTTPGet(a *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validatePortNumOrName(a.Port, path.Child("port"))...)
	allErrs = append(allErrs, validateOptionalEnum(a.Scheme, schemes, path.Child("scheme"))...)
	for i, h := range a.HTTPHeaders {
		for _, msg := range utilvalidation.IsHTTPHeaderName(h.Name) {
			allErrs = append(allErrs, field.Invalid(path.Child("httpHeaders").Index(i).Child("name"), h.Name, msg))
		}
	}
	return allErrs
}

// validatePortNumOrName validates the port of a probe or lifecycle handler.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		var allErrs field.ErrorList
		for _, msg := range utilvalidation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(path, port.StrVal, msg))
		}
		return allErrs
	}
	return validatePortNum(int(port.IntVal), path)
}

// validateNonnegative validates an int32 seconds-like field.
func validateNonnegative(v int32, path *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(v), path)
}
