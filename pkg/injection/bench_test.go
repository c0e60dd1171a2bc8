package injection

import (
	"fmt"
	"testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// benchPod is a typical pod: 2 containers, 5 env vars, 2 volumes.
const benchPod = `
metadata:
  name: web-7d9f8c-abcde
  namespace: shop
  labels: {app: web, tier: front, version: v3, pod-template-hash: 7d9f8c}
spec:
  volumes:
  - {name: data, emptyDir: {}}
  - {name: config, configMap: {name: web-config}}
  containers:
  - name: web
    image: registry.example.com/shop/web:3.1.4
    env:
    - {name: PORT, value: "8080"}
    - {name: LOG_LEVEL, value: info}
    - {name: POD_NAME, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}}
    volumeMounts: [{name: data, mountPath: /data}, {name: config, mountPath: /etc/web}]
    resources: {limits: {cpu: "1", memory: 1Gi}, requests: {cpu: 500m, memory: 512Mi}}
  - name: worker
    image: registry.example.com/shop/worker:3.1.4
    env:
    - {name: QUEUE, value: orders}
    - {name: LOG_LEVEL, value: info}
    volumeMounts: [{name: data, mountPath: /data}]
`

// benchMatching are the 5 SidecarSets that select benchPod.
var benchMatching = []string{
	`
metadata: {name: envoy}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - name: envoy
    image: envoyproxy/envoy:v1.30.1
    env: [{name: ENVOY_UID, value: "0"}]
    volumeMounts: [{name: envoy-config, mountPath: /etc/envoy}]
    transferEnv: [{sourceContainerName: web, envNames: [PORT, POD_NAME]}]
  volumes: [{name: envoy-config, configMap: {name: envoy}}]`,
	`
metadata: {name: log-agent}
spec:
  selector: {matchExpressions: [{key: tier, operator: In, values: [front, back]}]}
  containers:
  - name: log-agent
    image: fluent/fluent-bit:3.0
    podInjectPolicy: AfterAppContainer
    shareVolumePolicy: {type: enabled}
    resources: {limits: {cpu: 100m, memory: 128Mi}}`,
	`
metadata: {name: dns}
spec:
  selector: {matchLabels: {app: web, version: v3}}
  imagePullSecrets: [{name: registry}]
  initContainers:
  - {name: dns-init, image: busybox:1.36, command: [sh, -c, "true"]}
  containers:
  - name: dns
    image: coredns/coredns:1.11
    upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: "busybox:empty"}`,
	`
metadata: {name: metrics}
spec:
  selector: {matchExpressions: [{key: app, operator: Exists}]}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: shop}}
  patchPodMetadata: [{patchPolicy: Retain, annotations: {prometheus.io/scrape: "true"}}]
  containers:
  - {name: metrics, image: prom/statsd-exporter:v0.26, podInjectPolicy: AfterAppContainer}`,
	`
metadata: {name: vault}
spec:
  selector: {matchLabels: {pod-template-hash: 7d9f8c}}
  containers:
  - name: vault-agent
    image: hashicorp/vault:1.16
    volumeMounts: [{name: vault-token, mountPath: /vault}]
    resourcesPolicy:
      targetContainersMode: sum
      targetContainersNameRegex: ".*"
      resourcesExpr: {limits: {cpu: "max(cpu*10%, 50m)"}, requests: {memory: 64Mi}}
  volumes: [{name: vault-token, emptyDir: {medium: Memory}}]`,
}

func BenchmarkInject(b *testing.B) {
	for _, stored := range []int{10, 1000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			idx := NewIndex()
			for _, doc := range benchMatching {
				idx.Add(mustSidecarSet(b, doc))
			}
			for i := 0; idx.Len() < stored; i++ {
				idx.Add(nonMatching(b, i))
			}
			pod := mustPod(b, benchPod)
			nsLabels := map[string]string{"kubernetes.io/metadata.name": "shop"}
			if got := len(idx.Candidates("shop", pod.Labels)); got != len(benchMatching) {
				b.Fatalf("candidates = %d, want %d", got, len(benchMatching))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := Inject(Input{
					Pod:             pod,
					Namespace:       "shop",
					NamespaceLabels: nsLabels,
					SidecarSets:     idx.Candidates("shop", pod.Labels),
					Now:             testNow,
				})
				if err != nil || len(res.Patch) == 0 {
					b.Fatalf("Inject: %v, %d ops", err, len(res.Patch))
				}
			}
		})
	}
}

// nonMatching returns the i-th SidecarSet that does not select benchPod: other apps, other
// tiers, other namespaces, and a few selector shapes that land in the scan bucket.
func nonMatching(b *testing.B, i int) *v1alpha1.SidecarSet {
	var sel string
	switch i % 5 {
	case 0:
		sel = fmt.Sprintf("  selector: {matchLabels: {app: svc-%d}}", i)
	case 1:
		sel = fmt.Sprintf("  selector: {matchExpressions: [{key: app, operator: In, values: [svc-%d, job-%d]}]}", i, i)
	case 2:
		sel = fmt.Sprintf("  namespace: team-%d\n  selector: {matchLabels: {app: web}}", i)
	case 3:
		sel = fmt.Sprintf("  selector: {matchLabels: {team: t-%d, tier: front}}", i)
	case 4:
		sel = fmt.Sprintf("  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ns-%d}}\n  selector: {matchExpressions: [{key: app, operator: Exists}]}", i)
	}
	return mustSidecarSet(b, fmt.Sprintf("metadata: {name: other-%04d}\nspec:\n%s\n  containers: [{name: c-%d, image: x:1}]", i, sel, i))
}

// BenchmarkCandidates measures the Index lookup alone as the number of non-matching SidecarSets
// grows.
func BenchmarkCandidates(b *testing.B) {
	for _, stored := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			idx := NewIndex()
			for _, doc := range benchMatching {
				idx.Add(mustSidecarSet(b, doc))
			}
			for i := 0; idx.Len() < stored; i++ {
				idx.Add(nonMatching(b, i))
			}
			labels := mustPod(b, benchPod).Labels
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if got := len(idx.Candidates("shop", labels)); got != len(benchMatching) {
					b.Fatalf("candidates = %d", got)
				}
			}
		})
	}
}
