package sidecar

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func sidecarContainer(t *testing.T, doc string) *v1alpha1.SidecarContainer {
	t.Helper()
	sc := &v1alpha1.SidecarContainer{}
	if err := yaml.UnmarshalStrict([]byte(doc), sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

func pod(t *testing.T, doc string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func containers(t *testing.T, doc string) []corev1.Container {
	t.Helper()
	var cs []corev1.Container
	if err := yaml.UnmarshalStrict([]byte(doc), &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

const appPod = `
metadata:
  labels: {biz: main}
  annotations: {src: other}
spec:
  containers:
  - name: injected
    image: x
    env: [{name: IS_INJECTED, value: "true"}, {name: A, value: from-injected}]
    volumeMounts: [{name: injected-vol, mountPath: /injected}]
  - name: main
    image: app
    env:
    - {name: A, value: a}
    - {name: B, value: b}
    - {name: POD, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}}
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: logs, mountPath: /logs, subPathExpr: "$(POD)/$(MISSING)"}
    volumeDevices:
    - {name: disk, devicePath: /dev/disk}
  - name: other
    image: app
    env: [{name: A, value: other-a}, {name: C, value: c}]
    volumeMounts: [{name: data2, mountPath: /data}]
    volumeDevices: [{name: disk2, devicePath: /dev/disk2}]
`

func TestRender(t *testing.T) {
	p := pod(t, appPod)
	tests := []struct {
		name string
		sc   string
		opts RenderOptions
		want Rendered
	}{
		{
			name: "plain sidecar gets IS_INJECTED after its own env",
			sc: `
name: s
image: s:1
env: [{name: IS_INJECTED, value: "false"}]
volumeMounts: [{name: own, mountPath: /own}]
volumeDevices: [{name: owndev, devicePath: /dev/own}]`,
			want: Rendered{
				Containers: containers(t, `
- name: s
  image: s:1
  env: [{name: IS_INJECTED, value: "false"}, {name: IS_INJECTED, value: "true"}]
  volumeMounts: [{name: own, mountPath: /own}]
  volumeDevices: [{name: owndev, devicePath: /dev/own}]`),
				VolumeNames: []string{"own", "owndev"},
			},
		},
		{
			name: "shared mounts skip own paths and injected containers, bring subPathExpr env",
			sc: `
name: s
image: s:1
env: [{name: B, value: own-b}]
shareVolumePolicy: {type: enabled}
volumeMounts: [{name: own, mountPath: /data}]`,
			want: Rendered{
				Containers: containers(t, `
- name: s
  image: s:1
  env:
  - {name: B, value: own-b}
  - {name: IS_INJECTED, value: "true"}
  - {name: POD, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}}
  volumeMounts:
  - {name: own, mountPath: /data}
  - {name: logs, mountPath: /logs, subPathExpr: "$(POD)/$(MISSING)"}`),
				VolumeNames: []string{"own"},
			},
		},
		{
			name: "transferEnv by name, by label, by annotation; sorted names; own value wins; transfer before subPath env",
			sc: `
name: s
image: s:1
env: [{name: A, value: own}]
shareVolumePolicy: {type: enabled}
transferEnv:
- {sourceContainerName: main, envNames: [POD, B, A, NOPE]}
- {sourceContainerNameFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.labels['biz']"}}, envName: B}
- {sourceContainerNameFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.annotations['src']"}}, envName: C}
- {sourceContainerNameFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.name"}}, envName: C}
- {sourceContainerNameFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.labels['missing']"}}, envName: C}`,
			want: Rendered{
				Containers: containers(t, `
- name: s
  image: s:1
  env:
  - {name: A, value: own}
  - {name: IS_INJECTED, value: "true"}
  - {name: B, value: b}
  - {name: POD, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}}
  - {name: C, value: c}
  volumeMounts:
  - {name: data, mountPath: /data}
  - {name: logs, mountPath: /logs, subPathExpr: "$(POD)/$(MISSING)"}`),
			},
		},
		{
			name: "IsSidecar excludes containers about to be replaced from sharing",
			sc: `
name: s
image: s:1
shareVolumePolicy: {type: enabled}
shareVolumeDevicePolicy: {type: enabled}`,
			opts: RenderOptions{IsSidecar: func(n string) bool { return n == "main" }},
			want: Rendered{
				Containers: containers(t, `
- name: s
  image: s:1
  env: [{name: IS_INJECTED, value: "true"}]
  volumeMounts: [{name: data2, mountPath: /data}]
  volumeDevices: [{name: disk2, devicePath: /dev/disk2}]`),
			},
		},
		{
			name: "shared devices skip used paths",
			sc: `
name: s
image: s:1
shareVolumeDevicePolicy: {type: enabled}
volumeMounts: [{name: m, mountPath: /dev/disk2}]`,
			want: Rendered{
				Containers: containers(t, `
- name: s
  image: s:1
  env: [{name: IS_INJECTED, value: "true"}]
  volumeMounts: [{name: m, mountPath: /dev/disk2}]
  volumeDevices: [{name: disk, devicePath: /dev/disk}]`),
				VolumeNames: []string{"m"},
			},
		},
		{
			name: "resources override",
			sc: `
name: s
image: s:1
resources: {limits: {cpu: "1"}}`,
			opts: RenderOptions{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
			want: Rendered{
				Containers: containers(t, `
- name: s
  image: s:1
  env: [{name: IS_INJECTED, value: "true"}]
  resources: {requests: {cpu: 100m}}`),
			},
		},
		{
			name: "hot upgrade twins",
			sc: `
name: envoy
image: envoy:1
upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}`,
			want: Rendered{
				Containers: containers(t, `
- name: envoy-1
  image: envoy:1
  env:
  - {name: IS_INJECTED, value: "true"}
  - {name: SIDECARSET_VERSION, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.annotations['version.sidecarset.kruise.io/envoy-1']"}}}
  - {name: SIDECARSET_VERSION_ALT, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.annotations['versionalt.sidecarset.kruise.io/envoy-1']"}}}
- name: envoy-2
  image: empty:1
  env:
  - {name: IS_INJECTED, value: "true"}
  - {name: SIDECARSET_VERSION, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.annotations['version.sidecarset.kruise.io/envoy-2']"}}}
  - {name: SIDECARSET_VERSION_ALT, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: "metadata.annotations['versionalt.sidecarset.kruise.io/envoy-2']"}}}`),
				Working: "envoy-1",
				Annotations: map[string]string{
					"version.sidecarset.kruise.io/envoy-1":    "1",
					"versionalt.sidecarset.kruise.io/envoy-1": "0",
					"version.sidecarset.kruise.io/envoy-2":    "0",
					"versionalt.sidecarset.kruise.io/envoy-2": "1",
				},
			},
		},
		{
			name: "hot upgrade on a plain init container is ignored",
			sc: `
name: init
image: init:1
upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}`,
			opts: RenderOptions{Init: true},
			want: Rendered{Containers: containers(t, `
- name: init
  image: init:1
  env: [{name: IS_INJECTED, value: "true"}]`)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := sidecarContainer(t, tc.sc)
			scBefore, podBefore := sc.DeepCopy(), p.DeepCopy()
			got := Render(sc, p, tc.opts)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Render() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(scBefore, sc); diff != "" {
				t.Errorf("sidecar container modified (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(podBefore, p); diff != "" {
				t.Errorf("pod modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRenderTwinsDoNotShareSlices(t *testing.T) {
	sc := sidecarContainer(t, `
name: envoy
image: envoy:1
args: [a]
volumeMounts: [{name: v, mountPath: /v}]
upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}`)
	r := Render(sc, pod(t, appPod), RenderOptions{})
	r.Containers[0].Args[0] = "changed"
	r.Containers[0].VolumeMounts[0].Name = "changed"
	if r.Containers[1].Args[0] != "a" || r.Containers[1].VolumeMounts[0].Name != "v" || sc.Args[0] != "a" {
		t.Error("rendered twins or the SidecarSet share slices")
	}
}

func TestSidecarList(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cs := []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "z"}}, {Container: corev1.Container{Name: "a"}}}
	inits := []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "plain"}}, {Container: corev1.Container{Name: "native", RestartPolicy: &always}}}
	if diff := cmp.Diff([]string{"a", "native", "z"}, SidecarList(cs, inits)); diff != "" {
		t.Errorf("SidecarList (-want +got):\n%s", diff)
	}
	if got := SidecarList(nil, nil); got == nil || len(got) != 0 {
		t.Errorf("SidecarList(nil, nil) = %#v, want empty non-nil", got)
	}
}
