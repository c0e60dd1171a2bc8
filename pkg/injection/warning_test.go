package injection

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestInjectWarnings(t *testing.T) {
	const set = `
metadata: {name: logs}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - name: agent
    image: agent:v1
    volumeMounts: [{name: data, mountPath: /data}]
    transferEnv:
    - {sourceContainerName: app, envName: LOG_LEVEL}
    - {sourceContainerName: missing, envName: X}
    - sourceContainerNameFrom: {fieldRef: {fieldPath: "metadata.labels['main']"}}
      envNames: [A]
  volumes:
  - {name: data, emptyDir: {}}
`
	tests := []struct {
		name string
		pod  string
		want []Warning
	}{{
		name: "every transferEnv source present, no volume clash",
		pod: `
metadata: {name: p, namespace: default, labels: {app: web, main: app}}
spec:
  containers:
  - {name: app, image: app, env: [{name: LOG_LEVEL, value: debug}, {name: A, value: a}]}
`,
		want: []Warning{{SidecarSet: "logs", Field: "spec.containers[0].transferEnv[1]", Message: `source container "missing" is not in the pod; nothing copied`}},
	}, {
		name: "missing env, missing label source, pod volume and container win",
		pod: `
metadata: {name: p, namespace: default, labels: {app: web}}
spec:
  containers:
  - {name: app, image: app}
  - {name: agent, image: mine}
  volumes:
  - {name: data, hostPath: {path: /var/data}}
`,
		want: []Warning{
			{SidecarSet: "logs", Field: "spec.containers[0].transferEnv[0]", Message: `container "app" has no env var "LOG_LEVEL"; nothing copied`},
			{SidecarSet: "logs", Field: "spec.containers[0].transferEnv[1]", Message: `source container "missing" is not in the pod; nothing copied`},
			{SidecarSet: "logs", Field: "spec.containers[0].transferEnv[2]", Message: `source container "" is not in the pod; nothing copied`},
			{SidecarSet: "logs", Field: "spec.volumes[0]", Message: `the pod already has a different volume "data", which the sidecar mounts instead`},
			{SidecarSet: "logs", Field: "spec.containers[0]", Message: `replaces the pod's own container "agent"`},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Inject(Input{Pod: mustPod(t, tt.pod), SidecarSets: []*v1alpha1.SidecarSet{mustSidecarSet(t, set)}, Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			again, err := Inject(Input{Pod: res.Pod, SidecarSets: []*v1alpha1.SidecarSet{mustSidecarSet(t, set)}, Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Patch) != 0 {
				t.Errorf("reinvocation patched %v", again.Patch)
			}
		})
	}
}
