package celpatch

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"
)

// TestLiteral renders API values as CEL literals and evaluates them in kube-apiserver's CEL
// environment (homogeneous aggregate literals): the value a JSONPatch carries must marshal to the
// Go value's JSON, and the literal must be made of constants only (maps, lists and dyn() where a
// literal's values differ in type), which
// kube-apiserver's planner folds once per policy instead of building typed objects per pod.
func TestLiteral(t *testing.T) {
	env, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		value    any
		typeName string
		want     string // the literal, when given
	}{
		{name: "container", typeName: "Object.spec.containers", value: &corev1.Container{Name: "log", Image: "busybox:1.36",
			Env: []corev1.EnvVar{{Name: "A", Value: "b"}}},
			want: `{"env": dyn([{"name": "A", "value": "b"}]), "image": dyn("busybox:1.36"), "name": dyn("log"), "resources": dyn({})}`},
		{name: "elements of different types are each wrapped", typeName: "Object.spec.containers", value: &corev1.Container{Name: "log", Image: "busybox:1.36",
			Env: []corev1.EnvVar{{Name: "A", Value: "b"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			want: `{"env": dyn([dyn({"name": "A", "value": "b"}), dyn({"name": dyn("POD"), "valueFrom": dyn({"fieldRef": {"fieldPath": "metadata.name"}})})]), "image": dyn("busybox:1.36"), "name": dyn("log"), "resources": dyn({})}`},
		{name: "container with every kind of field", typeName: "Object.spec.containers", value: &corev1.Container{
			Name: "proxy", Image: "envoy:1", Command: []string{"envoy", "-c"}, Ports: []corev1.ContainerPort{{ContainerPort: 15001, Protocol: corev1.ProtocolTCP}},
			Env:       []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("admin")}},
				PeriodSeconds: 10, SuccessThreshold: 1},
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1337), Privileged: ptr.To(false)},
			RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways)}},
		{name: "volume", typeName: "Object.spec.volumes", value: &corev1.Volume{Name: "shared",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}}},
		{name: "empty pointer struct stays", typeName: "Object.spec.volumes", value: &corev1.Volume{Name: "scratch",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			want: `{"emptyDir": dyn({}), "name": dyn("scratch")}`},
		{name: "image pull secret", typeName: "Object.spec.imagePullSecrets", value: &corev1.LocalObjectReference{Name: "registry"},
			want: `{"name": "registry"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lit, err := literal(tc.value, tc.typeName)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && lit != tc.want {
				t.Errorf("literal:\n got %s\nwant %s", lit, tc.want)
			}
			if strings.Contains(lit, "Object.") {
				t.Errorf("the literal constructs typed objects: %s", lit)
			}
			ast, iss := env.Compile(lit)
			if iss.Err() != nil {
				t.Fatalf("%s does not compile: %v", lit, iss.Err())
			}
			prg, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := prg.Eval(map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			native, err := out.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asJSON(t, tc.value), asJSON(t, native)); diff != "" {
				t.Errorf("the JSONPatch value differs from the value's JSON (-want +got):\n%s", diff)
			}
		})
	}
}

// asJSON returns v's JSON decoded into plain values, for comparing JSON documents.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
