package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// templatePaths are where each workload kind keeps its pod template; a Pod is its own template.
var templatePaths = map[string][]string{
	"Deployment":            {"spec", "template"},
	"StatefulSet":           {"spec", "template"},
	"DaemonSet":             {"spec", "template"},
	"ReplicaSet":            {"spec", "template"},
	"ReplicationController": {"spec", "template"},
	"Job":                   {"spec", "template"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template"},
	"PodTemplate":           {"template"},
}

// ReadDocuments splits a YAML or JSON stream into objects, skipping empty documents.
func ReadDocuments(r io.Reader) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", len(out)+1, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetKind() == "List" {
			items, err := obj.ToList()
			if err != nil {
				return nil, err
			}
			for i := range items.Items {
				out = append(out, &items.Items[i])
			}
			continue
		}
		out = append(out, obj)
	}
}

// PodOf returns the pod an object stands for: the Pod itself, or a pod made of a workload's pod
// template (its metadata and spec) in the workload's namespace.
func PodOf(obj *unstructured.Unstructured) (*corev1.Pod, error) {
	raw := obj.Object
	if obj.GetKind() != "Pod" {
		path, ok := templatePaths[obj.GetKind()]
		if !ok {
			return nil, fmt.Errorf("%s %q: not a Pod or a workload with a pod template", obj.GetKind(), obj.GetName())
		}
		tmpl, found, err := unstructured.NestedMap(obj.Object, path...)
		if err != nil || !found {
			return nil, fmt.Errorf("%s %q: no pod template at .%v", obj.GetKind(), obj.GetName(), path)
		}
		raw = tmpl
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, pod); err != nil {
		return nil, fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	if obj.GetKind() != "Pod" {
		pod.Namespace = obj.GetNamespace()
		if pod.Name == "" {
			pod.GenerateName = obj.GetName() + "-"
		}
	}
	return pod, nil
}

// SetPod writes an injected pod back into its object: the whole Pod, or the template's
// annotations and spec (a template's other metadata and the workload are kept as written).
func SetPod(obj *unstructured.Unstructured, pod *corev1.Pod) error {
	converted, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return err
	}
	if obj.GetKind() == "Pod" {
		delete(converted, "status")
		obj.Object = converted
		obj.SetAPIVersion("v1")
		obj.SetKind("Pod")
		return nil
	}
	path := templatePaths[obj.GetKind()]
	if len(pod.Annotations) > 0 {
		if err := unstructured.SetNestedStringMap(obj.Object, pod.Annotations, append(append([]string(nil), path...), "metadata", "annotations")...); err != nil {
			return err
		}
	}
	return unstructured.SetNestedField(obj.Object, converted["spec"], append(append([]string(nil), path...), "spec")...)
}

// ReadFile reads the objects of a file, or of stdin for "-".
func ReadFile(stdin io.Reader, name string) ([]*unstructured.Unstructured, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	objs, err := ReadDocuments(r)
	if err == nil && len(objs) == 0 {
		err = fmt.Errorf("%s: no object", name)
	}
	return objs, err
}
