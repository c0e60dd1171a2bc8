package injection

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// diff returns explicit JSON patch operations on the parts of the pod injection may change:
// each list is added when the pod had none and replaced otherwise; annotations are added as a
// whole when the pod had none, else changed one key at a time (sorted by key).
func diff(orig, pod *corev1.Pod) []Operation {
	var ops []Operation
	ops = listOp(ops, "/spec/initContainers", len(orig.Spec.InitContainers), orig.Spec.InitContainers, pod.Spec.InitContainers)
	ops = listOp(ops, "/spec/containers", len(orig.Spec.Containers), orig.Spec.Containers, pod.Spec.Containers)
	ops = listOp(ops, "/spec/volumes", len(orig.Spec.Volumes), orig.Spec.Volumes, pod.Spec.Volumes)
	ops = listOp(ops, "/spec/imagePullSecrets", len(orig.Spec.ImagePullSecrets), orig.Spec.ImagePullSecrets, pod.Spec.ImagePullSecrets)
	return annotationOps(ops, orig.Annotations, pod.Annotations)
}

func listOp(ops []Operation, path string, origLen int, orig, cur any) []Operation {
	if equality.Semantic.DeepEqual(orig, cur) {
		return ops
	}
	op := "replace"
	if origLen == 0 {
		op = "add"
	}
	return append(ops, Operation{Op: op, Path: path, Value: cur})
}

func annotationOps(ops []Operation, orig, cur map[string]string) []Operation {
	if len(orig) == 0 {
		if len(cur) == 0 {
			return ops
		}
		return append(ops, Operation{Op: "add", Path: "/metadata/annotations", Value: cur})
	}
	var keys []string
	for k, v := range cur {
		if old, ok := orig[k]; !ok || old != v {
			keys = append(keys, k)
		}
	}
	for k := range orig {
		if _, ok := cur[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := "/metadata/annotations/" + escapePointer(k)
		v, ok := cur[k]
		switch _, had := orig[k]; {
		case !ok:
			ops = append(ops, Operation{Op: "remove", Path: path})
		case had:
			ops = append(ops, Operation{Op: "replace", Path: path, Value: v})
		default:
			ops = append(ops, Operation{Op: "add", Path: path, Value: v})
		}
	}
	return ops
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string { return pointerEscaper.Replace(s) }
