package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authentication/user"
	quota "k8s.io/apiserver/pkg/quota/v1/generic"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// countName is the quota name ResourceQuota objects use for NamespacedSidecarSets.
var countName = corev1.ResourceName("count/namespacedsidecarsets.apps.kruise.io")

func TestQuotaResourceName(t *testing.T) {
	if got := quota.ObjectCountQuotaResourceNameFor(NamespacedSidecarSetsResource); got != countName {
		t.Errorf("quota name = %q, want %q", got, countName)
	}
}

func TestResourceQuotaLastInChain(t *testing.T) {
	o := NewRecommendedOptions("/registry/test")
	order := o.Admission.RecommendedPluginOrder
	if got := order[len(order)-1]; got != resourcequota.PluginName {
		t.Errorf("last admission plugin = %q, want %q (order %v)", got, resourcequota.PluginName, order)
	}
	if o.Admission.DefaultOffPlugins.Has(resourcequota.PluginName) {
		t.Errorf("%s is off by default", resourcequota.PluginName)
	}
	if errs := o.Admission.Validate(); len(errs) > 0 {
		t.Errorf("admission options: %v", errs)
	}
}

// TestResourceQuotaEnforced builds the admission chain as the server does (its initializers on
// the generic ones), with only the ResourceQuota plugin on and a fake main cluster, and creates
// NamespacedSidecarSets against a ResourceQuota.
func TestResourceQuotaEnforced(t *testing.T) {
	cases := []struct {
		name       string
		used, hard int64
		otherNS    bool
		wantErr    string
		wantUsed   int64
	}{
		{name: "room left: charged", used: 1, hard: 2, wantUsed: 2},
		{name: "full: refused", used: 2, hard: 2, wantErr: "exceeded quota: team-quota", wantUsed: 2},
		{name: "zero: refused", used: 0, hard: 0, wantErr: "exceeded quota: team-quota", wantUsed: 0},
		{name: "another namespace's quota: not charged", used: 2, hard: 2, otherNS: true, wantUsed: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rq := &corev1.ResourceQuota{
				ObjectMeta: metav1.ObjectMeta{Name: "team-quota", Namespace: "team-a", ResourceVersion: "1"},
				Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{countName: *resource.NewQuantity(tc.hard, resource.DecimalSI)}},
				Status: corev1.ResourceQuotaStatus{
					Hard: corev1.ResourceList{countName: *resource.NewQuantity(tc.hard, resource.DecimalSI)},
					Used: corev1.ResourceList{countName: *resource.NewQuantity(tc.used, resource.DecimalSI)},
				},
			}
			kube := fake.NewClientset(rq)
			chain := quotaChain(t, kube)
			ns := "team-a"
			if tc.otherNS {
				ns = "team-b"
			}
			err := chain.Validate(context.Background(), createAttributes(ns), admission.NewObjectInterfacesFromScheme(Scheme))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("create refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("create error = %v, want one containing %q", err, tc.wantErr)
			}
			got, err := kube.CoreV1().ResourceQuotas("team-a").Get(context.Background(), "team-quota", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if used := got.Status.Used[countName]; used.Value() != tc.wantUsed {
				t.Errorf("status.used = %s, want %d", used.String(), tc.wantUsed)
			}
		})
	}
}

// quotaChain returns the validating admission chain of NewRecommendedOptions with only
// ResourceQuota enabled, initialized with the server's AdmissionInitializers on a fake main
// cluster whose informers have synced.
func quotaChain(t *testing.T, kube *fake.Clientset) admission.ValidationInterface {
	t.Helper()
	o := NewRecommendedOptions("/registry/test")
	o.Admission.EnablePlugins = []string{resourcequota.PluginName}
	for _, p := range o.Admission.RecommendedPluginOrder {
		if p != resourcequota.PluginName {
			o.Admission.DisablePlugins = append(o.Admission.DisablePlugins, p)
		}
	}
	cfg := NewConfig()
	cfg.GenericConfig.LoopbackClientConfig = &rest.Config{Host: "https://127.0.0.1:1"} // never reached
	initializers, err := cfg.AdmissionInitializers(cfg.GenericConfig)
	if err != nil {
		t.Fatal(err)
	}
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	dynamic := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	if err := o.Admission.ApplyTo(&cfg.GenericConfig.Config, factory, kube, dynamic, utilfeature.DefaultFeatureGate,
		cfg.GenericConfig.EffectiveVersion, initializers...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	ctx2, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if !cache.WaitForCacheSync(ctx2.Done(), factory.Core().V1().ResourceQuotas().Informer().HasSynced) {
		t.Fatal("the ResourceQuota informer did not sync")
	}
	chain, ok := cfg.GenericConfig.AdmissionControl.(admission.ValidationInterface)
	if !ok {
		t.Fatalf("admission chain %T does not validate", cfg.GenericConfig.AdmissionControl)
	}
	return chain
}

// createAttributes are those of a NamespacedSidecarSet create in namespace.
func createAttributes(namespace string) admission.Attributes {
	obj := &apps.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: namespace}}
	return admission.NewAttributesRecord(obj, nil, apps.Kind("NamespacedSidecarSet").WithVersion("v1alpha1"), namespace, "logs",
		NamespacedSidecarSetsResource.WithVersion("v1alpha1"), "", admission.Create, &metav1.CreateOptions{}, false,
		&user.DefaultInfo{Name: "tenant"})
}
