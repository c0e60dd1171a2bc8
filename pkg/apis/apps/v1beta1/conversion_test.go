package v1beta1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1"
)

// sharedSpec is the part of the spec the two versions write alike: the fields of OpenKruise's
// "all fields populated" conversion case other than the namespace and the custom version.
const sharedSpec = `
  selector: {matchLabels: {app: nginx}}
  initContainers:
  - name: init-sidecar
    image: init:latest
    podInjectPolicy: BeforeAppContainer
    upgradeStrategy: {upgradeType: ColdUpgrade}
    shareVolumePolicy: {type: enabled}
    transferEnv: [{sourceContainerName: app, envName: APP_ENV}]
  containers:
  - name: sidecar
    image: sidecar:latest
    podInjectPolicy: AfterAppContainer
    upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:latest}
    shareVolumePolicy: {type: disabled}
    shareVolumeDevicePolicy: {type: enabled}
    transferEnv: [{sourceContainerName: main, envNames: [ENV1, ENV2]}]
  - name: resources
    image: res:latest
    resourcesPolicy:
      targetContainersMode: sum
      targetContainersNameRegex: "^app-.*$"
      resourcesExpr:
        limits: {cpu: "max(cpu*50%, 50m)", memory: "200Mi"}
        requests: {cpu: "cpu*10%", memory: "memory*10%"}
  volumes: [{name: config-volume, emptyDir: {}}]
  updateStrategy:
    type: RollingUpdate
    selector: {matchLabels: {update: "true"}}
    partition: 30%
    maxUnavailable: 20%
    scatterStrategy: [{key: zone, value: us-west}]
  injectionStrategy:
    revision: {customVersion: v1.0, revisionName: test-revision, policy: Always}
  imagePullSecrets: [{name: my-secret}]
  revisionHistoryLimit: 5
  patchPodMetadata: [{annotations: {key: value}, patchPolicy: Overwrite}]
status: {observedGeneration: 1, matchedPods: 10, updatedPods: 8, readyPods: 9, updatedReadyPods: 7, latestRevision: test-revision-1, collisionCount: 0}
`

// pair is a SidecarSet written in one version and the object the other version reads back.
type pair struct {
	name     string
	v1alpha1 string
	v1beta1  string
}

// alphaToBeta are OpenKruise's v1alpha1 -> v1beta1 conversion cases, plus the annotation that
// keeps what v1beta1 cannot express.
var alphaToBeta = []pair{{
	name: "all fields: namespace wins over namespaceSelector, custom version label becomes spec.customVersion",
	v1alpha1: `
metadata: {name: test-sidecarset, labels: {app: test, apps.kruise.io/sidecarset-custom-version: v1.0}}
spec:
  namespace: test-namespace
  namespaceSelector: {matchLabels: {env: prod}}` + sharedSpec,
	v1beta1: `
metadata:
  name: test-sidecarset
  labels: {app: test}
  annotations: {apps.kruise.io/sidecarset-v1alpha1-namespace: '{"namespace":"test-namespace","namespaceSelector":{"matchLabels":{"env":"prod"}}}'}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: test-namespace}}
  customVersion: v1.0` + sharedSpec,
}, {
	name:     "minimal fields",
	v1alpha1: "metadata: {name: minimal}\nspec: {selector: {matchLabels: {app: test}}, containers: [{name: sidecar, image: sidecar:latest}]}",
	v1beta1:  "metadata: {name: minimal}\nspec: {selector: {matchLabels: {app: test}}, containers: [{name: sidecar, image: sidecar:latest}]}",
}, {
	name:     "namespace only",
	v1alpha1: "metadata: {name: ns-only}\nspec: {namespace: test-ns, selector: {matchLabels: {app: test}}}",
	v1beta1: `
metadata: {name: ns-only, annotations: {apps.kruise.io/sidecarset-v1alpha1-namespace: '{"namespace":"test-ns"}'}}
spec: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: test-ns}}, selector: {matchLabels: {app: test}}}`,
}, {
	name:     "namespaceSelector only",
	v1alpha1: "metadata: {name: nss-only}\nspec: {namespaceSelector: {matchLabels: {env: dev}}, selector: {matchLabels: {app: test}}}",
	v1beta1:  "metadata: {name: nss-only}\nspec: {namespaceSelector: {matchLabels: {env: dev}}, selector: {matchLabels: {app: test}}}",
}, {
	name:     "resourcesPolicy with max mode and only limits, in an init container",
	v1alpha1: "metadata: {name: rp}\nspec: {initContainers: [{name: init, image: i, restartPolicy: Always, resourcesPolicy: {targetContainersMode: max, resourcesExpr: {limits: {cpu: cpu}}}}]}",
	v1beta1:  "metadata: {name: rp}\nspec: {initContainers: [{name: init, image: i, restartPolicy: Always, resourcesPolicy: {targetContainersMode: max, resourcesExpr: {limits: {cpu: cpu}}}}]}",
}}

// betaToAlpha are OpenKruise's v1beta1 -> v1alpha1 conversion cases, plus an
// apps.kruise.io/sidecarset-custom-version label written in v1beta1, where it is a plain label.
var betaToAlpha = []pair{{
	name: "all fields: spec.customVersion becomes the custom version label",
	v1beta1: `
metadata: {name: test-sidecarset, labels: {app: test}}
spec:
  namespaceSelector: {matchLabels: {env: prod}}
  customVersion: v1.0` + sharedSpec,
	v1alpha1: `
metadata: {name: test-sidecarset, labels: {app: test, apps.kruise.io/sidecarset-custom-version: v1.0}}
spec:
  namespaceSelector: {matchLabels: {env: prod}}` + sharedSpec,
}, {
	name:     "minimal fields",
	v1beta1:  "metadata: {name: minimal}\nspec: {selector: {matchLabels: {app: test}}}",
	v1alpha1: "metadata: {name: minimal}\nspec: {selector: {matchLabels: {app: test}}}",
}, {
	name:     "namespaceSelector on the namespace name stays a namespaceSelector",
	v1beta1:  "metadata: {name: by-name}\nspec: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: staging}}}",
	v1alpha1: "metadata: {name: by-name}\nspec: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: staging}}}",
}, {
	name:     "nil namespaceSelector",
	v1beta1:  "metadata: {name: nil-nss}\nspec: {selector: {matchLabels: {app: test}}}",
	v1alpha1: "metadata: {name: nil-nss}\nspec: {selector: {matchLabels: {app: test}}}",
}, {
	name:     "a namespace annotation whose selector was changed in v1beta1 does not bring the namespace back",
	v1beta1:  `{metadata: {name: changed, annotations: {apps.kruise.io/sidecarset-v1alpha1-namespace: '{"namespace":"a"}'}}, spec: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: b}}}}`,
	v1alpha1: `{metadata: {name: changed, annotations: {apps.kruise.io/sidecarset-v1alpha1-namespace: '{"namespace":"a"}'}}, spec: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: b}}}}`,
}, {
	name:     "the custom version label of a v1beta1 object is kept aside; spec.customVersion wins",
	v1beta1:  "metadata: {name: both, labels: {apps.kruise.io/sidecarset-custom-version: old}}\nspec: {customVersion: new}",
	v1alpha1: "metadata: {name: both, labels: {apps.kruise.io/sidecarset-custom-version: new}, annotations: {apps.kruise.io/sidecarset-v1beta1-custom-version-label: old}}",
}, {
	name:     "a custom version label alone does not set the custom version in v1beta1",
	v1beta1:  "metadata: {name: label-only, labels: {apps.kruise.io/sidecarset-custom-version: old}}",
	v1alpha1: "metadata: {name: label-only, annotations: {apps.kruise.io/sidecarset-v1beta1-custom-version-label: old}}",
}}

func decode[T any](t *testing.T, doc string, into *T) *T {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(strings.TrimSpace(doc)), into); err != nil {
		t.Fatalf("decode %T: %v\n%s", into, err, doc)
	}
	return into
}

// through converts in to out's version through the internal version, as the server does.
func through[O any](t *testing.T, scheme *runtime.Scheme, in any, out *O) *O {
	t.Helper()
	hub := &apps.SidecarSet{}
	if err := scheme.Convert(in, hub, nil); err != nil {
		t.Fatal(err)
	}
	if err := scheme.Convert(hub, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConversionPairs checks that a SidecarSet written in one version reads back in the other
// with the values OpenKruise's conversion gives, and reads back unchanged in its own version.
func TestConversionPairs(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	for _, tc := range alphaToBeta {
		t.Run("v1alpha1 to v1beta1: "+tc.name, func(t *testing.T) {
			written := decode(t, tc.v1alpha1, &v1alpha1.SidecarSet{})
			want := decode(t, tc.v1beta1, &v1beta1.SidecarSet{})
			if diff := cmp.Diff(want, through(t, scheme, written, &v1beta1.SidecarSet{})); diff != "" {
				t.Errorf("v1beta1 read (-want +got):\n%s", diff)
			}
			back := through(t, scheme, through(t, scheme, written, &v1beta1.SidecarSet{}), &v1alpha1.SidecarSet{})
			if diff := cmp.Diff(written, back); diff != "" {
				t.Errorf("v1alpha1 read back (-want +got):\n%s", diff)
			}
		})
	}
	for _, tc := range betaToAlpha {
		t.Run("v1beta1 to v1alpha1: "+tc.name, func(t *testing.T) {
			written := decode(t, tc.v1beta1, &v1beta1.SidecarSet{})
			want := decode(t, tc.v1alpha1, &v1alpha1.SidecarSet{})
			if diff := cmp.Diff(want, through(t, scheme, written, &v1alpha1.SidecarSet{})); diff != "" {
				t.Errorf("v1alpha1 read (-want +got):\n%s", diff)
			}
			back := through(t, scheme, through(t, scheme, written, &v1alpha1.SidecarSet{}), &v1beta1.SidecarSet{})
			if diff := cmp.Diff(written, back); diff != "" {
				t.Errorf("v1beta1 read back (-want +got):\n%s", diff)
			}
		})
	}
}
