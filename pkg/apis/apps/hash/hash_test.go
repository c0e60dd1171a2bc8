package hash

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The golden values were computed by OpenKruise's algorithm over OpenKruise's own v1alpha1 types
// for the same documents, so equality proves the wire layout of SidecarContainer is identical. The
// cases "OpenKruise v1beta1, ..." were computed over OpenKruise's v1beta1 types (what its webhook
// and controller hash today) with its Kubernetes libraries (k8s.io/api v0.32), for the defaulted
// SidecarSet of the migration end-to-end test (TestMigrateFromOpenKruise): pods OpenKruise injected
// carry these values, and the server must compute the same to adopt them without an upgrade.
func TestOfMatchesOpenKruise(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want Hashes
	}{
		{
			name: "manual example, defaulted",
			spec: `
containers:
- name: sidecar1
  image: centos:6.7
  command: ["sleep", "999d"]
  imagePullPolicy: IfNotPresent
  terminationMessagePath: /dev/termination-log
  terminationMessagePolicy: File
  podInjectPolicy: BeforeAppContainer
  shareVolumePolicy: {type: disabled}
  upgradeStrategy: {upgradeType: ColdUpgrade}
  volumeMounts:
  - name: log-volume
    mountPath: /var/log
`,
			want: Hashes{
				WithImage:    "4zbdc2xzc8w7c4x2c6984266bc9d7zf87x946v7xdfv988f6c6fc9b7dz47w8zd5",
				WithoutImage: "wcv47954b7xv5w4fbw682bbf78cw2449448vbf4fvvwv77947bc7fcv7fw89f98x",
			},
		},
		{
			name: "hot upgrade, transferEnv and a native sidecar init container",
			spec: `
containers:
- name: envoy
  image: envoy:v1
  env: [{name: A, value: b}]
  ports: [{containerPort: 80, protocol: TCP}]
  podInjectPolicy: AfterAppContainer
  upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}
  transferEnv: [{sourceContainerName: app, envName: X, envNames: [Y]}]
initContainers:
- name: init
  image: busybox
  restartPolicy: Always
`,
			want: Hashes{
				WithImage:    "c58cx6z57d9cfc285d6w79fwz8bf9zc6559754dx84xb2v44bw694b9728d2cdzv",
				WithoutImage: "fdx6c9xzd49857df8xc6dbx2z45v279b865999wb8cv2zcxf89cf46d6v689z5wd",
			},
		},
		{
			name: "OpenKruise v1beta1, busybox:1.35",
			spec: migrateSpec("busybox:1.35"),
			want: Hashes{
				WithImage:    "x4czcfwwvwcx72v4v9x46vwcc4vd9zx747vf6wc8dc446dz49xzc48d4dc488598",
				WithoutImage: "4zv6464d6c4bb89d2298d2w2cww65d2d5f89bd72zcxw4dbcf85f44774f6c4794",
			},
		},
		{
			name: "OpenKruise v1beta1, busybox:1.36",
			spec: migrateSpec("busybox:1.36"),
			want: Hashes{
				WithImage:    "z752v6x4x47829vxwf6c744f948f768wf284b262w4d7z92fzbcc9d24fx254wv5",
				WithoutImage: "4zv6464d6c4bb89d2298d2w2cww65d2d5f89bd72zcxw4dbcf85f44774f6c4794",
			},
		},
		{
			name: "OpenKruise v1beta1, resources, ports, transferEnv and a native sidecar",
			spec: `
initContainers:
- name: agent-init
  image: agent:2
  restartPolicy: Always
  imagePullPolicy: IfNotPresent
  resources: {}
  terminationMessagePath: /dev/termination-log
  terminationMessagePolicy: File
  podInjectPolicy: AfterAppContainer
  shareVolumePolicy: {type: disabled}
  upgradeStrategy: {upgradeType: ColdUpgrade}
containers:
- name: fluentd
  image: fluentd:v1.16
  env: [{name: LOG_LEVEL, value: info}]
  ports: [{containerPort: 24224, protocol: TCP}]
  resources:
    limits: {cpu: 500m, memory: 256Mi}
    requests: {cpu: 100m, memory: 64Mi}
  volumeMounts: [{name: varlog, mountPath: /var/log}]
  imagePullPolicy: IfNotPresent
  terminationMessagePath: /dev/termination-log
  terminationMessagePolicy: File
  podInjectPolicy: AfterAppContainer
  shareVolumePolicy: {type: enabled}
  upgradeStrategy: {upgradeType: ColdUpgrade}
  transferEnv: [{sourceContainerName: app, envName: TZ}]
`,
			want: Hashes{
				WithImage:    "c429wb444z875ccbcv24774z9d4vddx88527xx85v88dd9vb574874wcv4fz26xx",
				WithoutImage: "bvb7v4cc74z75dfb44b44894bb44bzffc5w4zfv2c66949f4vx6c9zvbcdv6c755",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1alpha1.SidecarSetSpec{}
			if err := yaml.UnmarshalStrict([]byte(tc.spec), spec); err != nil {
				t.Fatal(err)
			}
			got, err := Of(spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Of() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOfIgnoresWhatIsNotHashed(t *testing.T) {
	base := v1alpha1.SidecarSetSpec{Containers: []v1alpha1.SidecarContainer{{}}}
	base.Containers[0].Name, base.Containers[0].Image = "c", "img:1"
	want, err := Of(&base)
	if err != nil {
		t.Fatal(err)
	}
	changed := base.DeepCopy()
	changed.Volumes = nil
	changed.UpdateStrategy.Paused = true
	changed.InitContainers = []v1alpha1.SidecarContainer{{}} // plain init containers are not hashed
	changed.InitContainers[0].Name = "init"
	got, err := Of(changed)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("hashes changed by fields outside the hash: %v != %v", got, want)
	}

	imageOnly := base.DeepCopy()
	imageOnly.Containers[0].Image = "img:2"
	got, _ = Of(imageOnly)
	if got.WithImage == want.WithImage || got.WithoutImage != want.WithoutImage {
		t.Errorf("an image change must change only the with-image hash: %v vs %v", got, want)
	}
}

// migrateSpec is the spec of TestMigrateFromOpenKruise's SidecarSet as OpenKruise stores it
// (defaulted), with image.
func migrateSpec(image string) string {
	return `
containers:
- name: sidecar1
  image: ` + image + `
  command: ["sleep", "999d"]
  imagePullPolicy: IfNotPresent
  resources: {}
  terminationMessagePath: /dev/termination-log
  terminationMessagePolicy: File
  podInjectPolicy: BeforeAppContainer
  shareVolumePolicy: {type: disabled}
  upgradeStrategy: {upgradeType: ColdUpgrade}
`
}
