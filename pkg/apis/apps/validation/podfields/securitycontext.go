package podfields

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Windows runAsUserName and GMSA limits, as kube-apiserver sets them.
const (
	maxGMSACredentialSpecLength  = 64 * 1024
	maxRunAsUserNameDomainLength = 256
	maxRunAsUserNameUserLength   = 104
	maxLocalhostProfileLength    = 4095
)

var (
	procMountTypes   = []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}
	seccompTypes     = []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}
	appArmorTypes    = []corev1.AppArmorProfileType{corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}
	controlChars     = regexp.MustCompile(`[[:cntrl:]]+`)
	netBiosDomain    = regexp.MustCompile(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	dnsDomain        = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
	userNameBadChars = regexp.MustCompile(`["/\\:;|=,\+\*\?<>@\[\]]`)
	userNameDots     = regexp.MustCompile(`^[\. ]+$`)
)

// validateSecurityContext validates a container's security context as kube-apiserver does. Two
// rules are left to it because they depend on the pod or the cluster: privileged containers need
// --allow-privileged, and procMount Unmasked needs the pod's hostUsers false.
func validateSecurityContext(sc *corev1.SecurityContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	if sc.RunAsUser != nil {
		for _, msg := range utilvalidation.IsValidUserID(*sc.RunAsUser) {
			allErrs = append(allErrs, field.Invalid(path.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range utilvalidation.IsValidGroupID(*sc.RunAsGroup) {
			allErrs = append(allErrs, field.Invalid(path.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if sc.ProcMount != nil {
		allErrs = append(allErrs, validateSupported(*sc.ProcMount, procMountTypes, path.Child("procMount"))...)
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			allErrs = append(allErrs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					allErrs = append(allErrs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	allErrs = append(allErrs, validateWindowsOptions(sc.WindowsOptions, path.Child("windowsOptions"))...)
	return append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
}

// validateSeccompProfile requires a type, and a relative localhostProfile exactly for Localhost.
func validateSeccompProfile(sp *corev1.SeccompProfile, path *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	allErrs := ValidateEnum(sp.Type, seccompTypes, path.Child("type"))
	if len(allErrs) > 0 && sp.Type == "" {
		allErrs[0].Detail = "type is required when seccompProfile is set"
	}
	switch {
	case sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		allErrs = append(allErrs, field.Required(path.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == corev1.SeccompProfileTypeLocalhost:
		allErrs = append(allErrs, validateLocalDescendingPath(*sp.LocalhostProfile, path.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		allErrs = append(allErrs, field.Invalid(path.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return allErrs
}

// validateAppArmorProfile requires a type, and an unpadded localhostProfile exactly for Localhost.
func validateAppArmorProfile(profile *corev1.AppArmorProfile, path *field.Path) field.ErrorList {
	if profile == nil {
		return nil
	}
	lp := path.Child("localhostProfile")
	switch profile.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if profile.LocalhostProfile == nil {
			return field.ErrorList{field.Required(lp, "must be set when AppArmor type is Localhost")}
		}
		var allErrs field.ErrorList
		name := *profile.LocalhostProfile
		if strings.TrimSpace(name) != name {
			allErrs = append(allErrs, field.Invalid(lp, name, "must not be padded with whitespace"))
		} else if name == "" {
			allErrs = append(allErrs, field.Required(lp, "must be set when AppArmor type is Localhost"))
		}
		if len(name) > maxLocalhostProfileLength {
			allErrs = append(allErrs, field.TooLong(lp, "", maxLocalhostProfileLength))
		}
		return allErrs
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if profile.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(lp, profile.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
		}
		return nil
	case "":
		return field.ErrorList{field.Required(path.Child("type"), "type is required when appArmorProfile is set")}
	}
	return field.ErrorList{field.NotSupported(path.Child("type"), profile.Type, appArmorTypes)}
}

// validateWindowsOptions validates the GMSA credential spec and the Windows user name. Whether
// hostProcess fits the pod (hostNetwork, every container) is the pod's problem.
func validateWindowsOptions(o *corev1.WindowsSecurityContextOptions, path *field.Path) field.ErrorList {
	if o == nil {
		return nil
	}
	var allErrs field.ErrorList
	if name := o.GMSACredentialSpecName; name != nil {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(*name) {
			allErrs = append(allErrs, field.Invalid(path.Child("gmsaCredentialSpecName"), *name, msg))
		}
	}
	if spec := o.GMSACredentialSpec; spec != nil {
		p := path.Child("gmsaCredentialSpec")
		if len(*spec) == 0 {
			allErrs = append(allErrs, field.Invalid(p, *spec, "gmsaCredentialSpec cannot be an empty string"))
		} else if len(*spec) > maxGMSACredentialSpecLength {
			allErrs = append(allErrs, field.Invalid(p, *spec, fmt.Sprintf("gmsaCredentialSpec size must be under %d KiB", maxGMSACredentialSpecLength/1024)))
		}
	}
	if name := o.RunAsUserName; name != nil {
		p := path.Child("runAsUserName")
		for _, msg := range windowsUserNameErrors(*name) {
			allErrs = append(allErrs, field.Invalid(p, *name, msg))
		}
	}
	return allErrs
}

// windowsUserNameErrors checks a runAsUserName of the form [DOMAIN\]USER.
func windowsUserNameErrors(name string) []string {
	switch {
	case name == "":
		return []string{"runAsUserName cannot be an empty string"}
	case controlChars.MatchString(name):
		return []string{"runAsUserName cannot contain control characters"}
	case strings.Count(name, `\`) > 1:
		return []string{"runAsUserName cannot contain more than one backslash"}
	}
	domain, user, hasDomain := strings.Cut(name, `\`)
	if !hasDomain {
		domain, user = "", name
	}
	var msgs []string
	if len(domain) >= maxRunAsUserNameDomainLength {
		msgs = append(msgs, fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxRunAsUserNameDomainLength))
	}
	if hasDomain && !netBiosDomain.MatchString(domain) && !dnsDomain.MatchString(domain) {
		msgs = append(msgs, "runAsUserName's Domain doesn't match the NetBios nor the DNS format")
	}
	if len(user) == 0 {
		msgs = append(msgs, "runAsUserName's User cannot be empty")
	} else if len(user) > maxRunAsUserNameUserLength {
		msgs = append(msgs, fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxRunAsUserNameUserLength))
	}
	if userNameDots.MatchString(user) {
		msgs = append(msgs, "runAsUserName's User cannot contain only periods or spaces")
	}
	if userNameBadChars.MatchString(user) {
		msgs = append(msgs, `runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`)
	}
	return msgs
}
