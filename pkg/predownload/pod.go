package predownload

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Label marks the pull pods, with the value "true": the controller watches its pull pods by it.
// No workload selects it, and the pods carry no other label.
const Label = "sidecarset.dev/image-predownload"

// SidecarSetAnnotation names the SidecarSet a pull pod pulls for.
const SidecarSetAnnotation = "sidecarset.dev/image-predownload-for"

// ContainerName is the name of a pull pod's container.
const ContainerName = "pull"

// missingCommand is the command of a pull pod's container: a path no image has, so that the
// container never runs the image's program, whatever the image holds (no shell is needed). The
// kubelet pulls the image first, then fails to start the container: that failure says the image is
// on the node.
const missingCommand = "/.sidecarset-image-predownload/never-run"

// PodName is the name of the pull pod of key for a SidecarSet: one name per SidecarSet, node and
// image, so that a second create of the same pull (a lost answer, a new leader) finds it there.
func PodName(sidecarSet string, key Key) string {
	sum := sha256.Sum256([]byte(sidecarSet + "\x00" + key.Node + "\x00" + key.Image))
	return "sidecarset-pull-" + hex.EncodeToString(sum[:10])
}

// NewPod returns the pull pod of key for a SidecarSet, in namespace: bound to the node (no
// scheduler), tolerating every taint, the image pulled if not present, a command that does not
// exist so that nothing of the image runs, never restarted, and ended by the kubelet after
// timeout whatever happens to the controller. secrets are the image pull secrets it names (those
// of the SidecarSet's spec: secrets of those names in namespace are used, others are skipped by
// the kubelet).
func NewPod(namespace, sidecarSet string, key Key, secrets []corev1.LocalObjectReference, cfg Config) *corev1.Pod {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        PodName(sidecarSet, key),
			Namespace:   namespace,
			Labels:      map[string]string{Label: "true"},
			Annotations: map[string]string{SidecarSetAnnotation: sidecarSet},
		},
		Spec: corev1.PodSpec{
			NodeName:                      key.Node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To(int64(cfg.Timeout.Seconds())),
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			ImagePullSecrets:              secrets,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(int64(65534)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           key.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{missingCommand},
				Resources:       corev1.ResourceRequirements{Requests: small, Limits: small},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// pullFailures are the waiting reasons of a container whose image cannot be pulled.
var pullFailures = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"RegistryUnavailable": true, "SignatureValidationFailed": true,
}

// Observe returns the pull of a pull pod and whether pod is one (Label, SidecarSetAnnotation, its
// container). The image is on the node once the container was created, started or failed to
// start (the kubelet creates a container only with its image there), or the pod succeeded; the
// pull failed when the kubelet says so, or the pod ended otherwise (its deadline, an eviction).
func Observe(pod *corev1.Pod) (Pull, string, bool) {
	ss, ok := pod.Annotations[SidecarSetAnnotation]
	if pod.Labels[Label] != "true" || !ok || len(pod.Spec.Containers) != 1 {
		return Pull{}, "", false
	}
	p := Pull{Key: Key{Node: pod.Spec.NodeName, Image: pod.Spec.Containers[0].Image}, Name: pod.Name,
		Created: pod.CreationTimestamp.Time, Phase: Pulling}
	for _, st := range pod.Status.ContainerStatuses {
		w := st.State.Waiting
		switch {
		case st.Name != ContainerName:
		case st.State.Running != nil || st.State.Terminated != nil || st.ImageID != "":
			p.Phase = Pulled
		case w != nil && pullFailures[w.Reason]:
			p.Phase, p.Message = Failed, w.Reason+": "+w.Message
		case w != nil && (w.Reason == "CreateContainerError" || w.Reason == "CreateContainerConfigError" || w.Reason == "RunContainerError"):
			p.Phase = Pulled
		}
	}
	switch {
	case p.Phase != Pulling:
	case pod.Status.Phase == corev1.PodSucceeded:
		p.Phase = Pulled
	case pod.Status.Phase == corev1.PodFailed:
		p.Phase, p.Message = Failed, pod.Status.Reason+": "+pod.Status.Message
	}
	return p, ss, true
}

// Normalize returns the full name of an image reference as nodes report it
// (docker.io/library/busybox:latest for busybox), the reference itself when it does not parse.
func Normalize(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.TagNameOnly(named).String()
}
