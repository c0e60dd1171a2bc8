package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
)

func TestCacheMetrics(t *testing.T) {
	sets := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, name := range []string{"a", "b"} {
		if err := sets.Add(&metav1.ObjectMeta{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	revs := cache.NewStore(cache.MetaNamespaceKeyFunc)
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	lister := corelisters.NewConfigMapLister(cms).ConfigMaps("sidecarset-system")
	tests := []struct {
		name      string
		configMap *corev1.ConfigMap
		want      string
	}{
		{name: "no whitelist", want: "0"},
		{name: "another ConfigMap", configMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "sidecarset-system", ResourceVersion: "7"}}, want: "0"},
		{name: "the whitelist", configMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kruise-configuration", Namespace: "sidecarset-system", ResourceVersion: "4821"}}, want: "4821"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.configMap != nil {
				if err := cms.Add(tc.configMap); err != nil {
					t.Fatal(err)
				}
			}
			c := &cacheCollector{stores: map[string]cache.Store{"sidecarsets": sets, "sidecarsetrevisions": revs}, whitelist: cachedVersion(lister, "kruise-configuration")}
			want := `
# HELP sidecarset_cached_objects [ALPHA] Objects in the caches admission and injection read, by resource: SidecarSets of both kinds and their revisions, as the server has seen them so far.
# TYPE sidecarset_cached_objects gauge
sidecarset_cached_objects{resource="sidecarsetrevisions"} 0
sidecarset_cached_objects{resource="sidecarsets"} 2
# HELP sidecarset_patch_metadata_whitelist_resource_version [ALPHA] The resourceVersion of the patchPodMetadata whitelist ConfigMap that admission of SidecarSet writes reads now; 0 while there is none.
# TYPE sidecarset_patch_metadata_whitelist_resource_version gauge
sidecarset_patch_metadata_whitelist_resource_version ` + tc.want + "\n"
			if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want)); err != nil {
				t.Error(err)
			}
		})
	}
}
