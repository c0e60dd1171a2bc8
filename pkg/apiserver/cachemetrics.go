package apiserver

import (
	"sort"
	"strconv"
	"sync"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The server's caches answer admission and injection a watch event behind their stores. These
// gauges say what they hold when /metrics is read, so an operator (or a test) can tell that a write
// has reached them instead of guessing how long that takes.
var (
	cachedObjectsDesc = metrics.NewDesc("sidecarset_cached_objects",
		"Objects in the caches admission and injection read, by resource: SidecarSets of both kinds and their revisions, as the server has seen them so far.",
		[]string{"resource"}, nil, metrics.ALPHA, "")
	whitelistVersionDesc = metrics.NewDesc("sidecarset_patch_metadata_whitelist_resource_version",
		"The resourceVersion of the patchPodMetadata whitelist ConfigMap that admission of SidecarSet writes reads now; 0 while there is none.",
		nil, nil, metrics.ALPHA, "")
)

// cacheCollector reads the caches at scrape time: nothing is counted on the request path.
type cacheCollector struct {
	metrics.BaseStableCollector
	mu     sync.Mutex
	stores map[string]cache.Store
	// whitelist returns the resourceVersion of the whitelist ConfigMap in the cache, "" without one.
	whitelist func() string
}

func (c *cacheCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- cachedObjectsDesc
	ch <- whitelistVersionDesc
}

func (c *cacheCollector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	stores, whitelist := c.stores, c.whitelist
	c.mu.Unlock()
	names := make([]string, 0, len(stores))
	for name := range stores {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ch <- metrics.NewLazyConstMetric(cachedObjectsDesc, metrics.GaugeValue, float64(len(stores[name].ListKeys())), name)
	}
	if whitelist != nil {
		ch <- metrics.NewLazyConstMetric(whitelistVersionDesc, metrics.GaugeValue, resourceVersionValue(whitelist()))
	}
}

// resourceVersionValue is rv as a number for a gauge (etcd's revisions are), 0 for none.
func resourceVersionValue(rv string) float64 {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return float64(v)
}

var (
	caches     = &cacheCollector{}
	cachesOnce sync.Once
)

// serveCacheMetrics makes /metrics report the caches of stores and the whitelist version
// (registered once per process; a later call replaces what is reported).
func serveCacheMetrics(stores map[string]cache.Store, whitelist func() string) {
	cachesOnce.Do(func() { legacyregistry.CustomMustRegister(caches) })
	caches.mu.Lock()
	caches.stores, caches.whitelist = stores, whitelist
	caches.mu.Unlock()
}

// cachedVersion returns the resourceVersion of the ConfigMap name as configMaps has it, "" when
// it has none.
func cachedVersion(configMaps corelisters.ConfigMapNamespaceLister, name string) func() string {
	return func() string {
		cm, err := configMaps.Get(name)
		if err != nil {
			return ""
		}
		return cm.ResourceVersion
	}
}
