package podvalidation

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// excludedFields are never generated: the SidecarSet-only fields (not corev1.Container fields,
// validated by this server alone) and restartPolicy, on which this server deliberately keeps
// OpenKruise's stricter rule (see TestStricterThanKube).
var excludedFields = sets.New("PodInjectPolicy", "UpgradeStrategy", "ShareVolumePolicy", "ShareVolumeDevicePolicy",
	"TransferEnv", "ResourcesPolicy", "RestartPolicy")

var (
	intOrString  = reflect.TypeOf(intstr.IntOrString{})
	quantityType = reflect.TypeOf(resource.Quantity{})
	objectMeta   = reflect.TypeOf(metav1.ObjectMeta{})
)

// leaf is a value the mutation generator may change.
type leaf struct {
	v      reflect.Value
	parent reflect.Type
	field  string
	// regular is set below spec.containers, where restartPolicyRules are excluded too.
	regular bool
}

// leaves returns the values of v that can be changed: scalars, pointers, slices and maps.
func leaves(v reflect.Value, parent reflect.Type, field string, regular bool, out []leaf) []leaf {
	if excludedFields.Has(field) || (regular && field == "RestartPolicyRules") {
		return out
	}
	switch v.Kind() {
	case reflect.Pointer:
		out = append(out, leaf{v, parent, field, regular})
		if !v.IsNil() {
			out = leaves(v.Elem(), parent, field, regular, out)
		}
	case reflect.Struct:
		if v.Type() == quantityType || v.Type() == intOrString {
			return append(out, leaf{v, parent, field, regular})
		}
		if v.Type() == objectMeta {
			return out
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.IsExported() {
				out = leaves(v.Field(i), v.Type(), f.Name, regular || f.Name == "Containers", out)
			}
		}
	case reflect.Slice:
		out = append(out, leaf{v, parent, field, regular})
		for i := 0; i < v.Len(); i++ {
			out = leaves(v.Index(i), parent, field, regular, out)
		}
	case reflect.Map, reflect.String, reflect.Bool, reflect.Int32, reflect.Int64:
		out = append(out, leaf{v, parent, field, regular})
	}
	return out
}

// mutate changes one leaf of in.
func mutate(r *rand.Rand, f *randfill.Filler, in *sidecars) string {
	all := leaves(reflect.ValueOf(in).Elem(), reflect.TypeOf(*in), "", false, nil)
	l := all[r.IntN(len(all))]
	v := l.v
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
			if r.IntN(2) == 0 {
				f.Fill(v.Interface())
				normalize(r, v, l.parent, l.field)
			}
			return "set " + l.field
		}
		v.Set(reflect.Zero(v.Type()))
		return "unset " + l.field
	case reflect.Slice:
		switch {
		case v.Len() > 0 && r.IntN(2) == 0:
			i := r.IntN(v.Len())
			v.Set(reflect.AppendSlice(v.Slice(0, i), v.Slice(i+1, v.Len())))
			return "remove from " + l.field
		case v.Len() > 0:
			v.Set(reflect.Append(v, deepCopy(v.Index(r.IntN(v.Len())))))
			return "duplicate in " + l.field
		default:
			e := reflect.New(v.Type().Elem())
			f.Fill(e.Interface())
			normalize(r, e, l.parent, l.field)
			v.Set(reflect.Append(v, e.Elem()))
			return "add to " + l.field
		}
	case reflect.Map:
		setMapEntry(r, v)
		return "add key to " + l.field
	case reflect.Struct: // a quantity or a port
		setScalar(r, v, l.parent, l.field)
		return fmt.Sprintf("%s=%v", l.field, v.Interface())
	default:
		setScalar(r, v, l.parent, l.field)
		return fmt.Sprintf("%s=%v", l.field, v.Interface())
	}
}

// deepCopy returns a copy of v that shares nothing with it.
func deepCopy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type())
	copyValue(out.Elem(), v)
	return out.Elem()
}

// copyValue deep-copies src into dst (exported fields; quantities by value).
func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(src.Type().Elem()))
			copyValue(dst.Elem(), src.Elem())
		}
	case reflect.Slice:
		if !src.IsNil() {
			dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
			for i := 0; i < src.Len(); i++ {
				copyValue(dst.Index(i), src.Index(i))
			}
		}
	case reflect.Map:
		if !src.IsNil() {
			dst.Set(reflect.MakeMap(src.Type()))
			for _, k := range src.MapKeys() {
				dst.SetMapIndex(k, src.MapIndex(k))
			}
		}
	case reflect.Struct:
		if src.Type() == quantityType || src.Type() == objectMeta || src.Type() == intOrString {
			dst.Set(src)
			return
		}
		for i := 0; i < src.NumField(); i++ {
			if src.Type().Field(i).IsExported() {
				copyValue(dst.Field(i), src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}

func pick[T any](r *rand.Rand, pool []T) T { return pool[r.IntN(len(pool))] }

// setScalar sets a string, int or bool from the pools.
func setScalar(r *rand.Rand, v reflect.Value, parent reflect.Type, field string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(pick(r, stringPool(parent, field, v.Type())))
	case reflect.Int32, reflect.Int64:
		v.SetInt(pick(r, intPool(field)))
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Struct:
		switch {
		case v.Type() == quantityType:
			v.Set(reflect.ValueOf(resource.MustParse(pick(r, quantities))))
		case r.IntN(2) == 0:
			v.Set(reflect.ValueOf(intstr.FromInt32(int32(pick(r, intPool("Port"))))))
		default:
			v.Set(reflect.ValueOf(intstr.FromString(pick(r, stringPools["ContainerPort.Name"]))))
		}
	}
}

// setMapEntry adds an entry to a map of strings or a resource list.
func setMapEntry(r *rand.Rand, m reflect.Value) {
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	if m.Type() == reflect.TypeOf(corev1.ResourceList{}) {
		name := pick(r, stringPools["ResourceName"])
		m.SetMapIndex(reflect.ValueOf(corev1.ResourceName(name)), reflect.ValueOf(resource.MustParse(pick(r, quantities))))
		return
	}
	if m.Type().Key().Kind() == reflect.String && m.Type().Elem().Kind() == reflect.String {
		m.SetMapIndex(reflect.ValueOf(pick(r, mapKeys)).Convert(m.Type().Key()), reflect.ValueOf(pick(r, mapValues)).Convert(m.Type().Elem()))
	}
}

// normalize replaces the random scalars randfill produced below v by pool values (most of the
// time), so that the generated objects sit near the boundary of validity.
func normalize(r *rand.Rand, v reflect.Value, parent reflect.Type, field string) {
	for _, l := range leaves(v, parent, field, false, nil) {
		switch l.v.Kind() {
		case reflect.String, reflect.Int32, reflect.Int64, reflect.Struct:
			if r.IntN(10) > 0 {
				setScalar(r, l.v, l.parent, l.field)
			}
		}
	}
}

// filler returns a randfill filler for sparse objects with pool-based quantities and metadata.
func filler(seed int64, nilChance float64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(nilChance).NumElements(0, 2).MaxDepth(8).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantities[c.Intn(len(quantities))])
		},
		func(l *corev1.ResourceList, c randfill.Continue) {
			names := stringPools["ResourceName"]
			*l = corev1.ResourceList{}
			for range c.Intn(3) {
				(*l)[corev1.ResourceName(names[c.Intn(len(names))])] = resource.MustParse(quantities[c.Intn(len(quantities))])
			}
		},
		func(m *map[string]string, c randfill.Continue) {
			*m = map[string]string{}
			for range c.Intn(3) {
				(*m)[mapKeys[c.Intn(len(mapKeys))]] = mapValues[c.Intn(len(mapValues))]
			}
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			if c.Intn(3) == 0 {
				m.Labels = map[string]string{mapKeys[c.Intn(len(mapKeys))]: mapValues[c.Intn(len(mapValues))]}
			}
			if c.Intn(3) == 0 {
				m.Annotations = map[string]string{mapKeys[c.Intn(len(mapKeys))]: "v"}
			}
			if c.Intn(6) == 0 {
				m.Name = "forbidden"
			}
		},
	)
}

// randomContainer returns a sparse random container; init containers are native sidecars half
// of the time.
func randomContainer(r *rand.Rand, f *randfill.Filler, init bool) v1alpha1.SidecarContainer {
	c := corev1.Container{}
	f.Fill(&c)
	normalize(r, reflect.ValueOf(&c), reflect.TypeOf(v1alpha1.SidecarContainer{}), "Container")
	// Keep a few fields, so that some containers are valid.
	cv := reflect.ValueOf(&c).Elem()
	for i := 0; i < cv.NumField(); i++ {
		if r.IntN(4) > 0 {
			cv.Field(i).Set(reflect.Zero(cv.Field(i).Type()))
		}
	}
	c.Name = pick(r, []string{"proxy", "agent", "logger", "proxy", "Bad_Name!", "agent", "logger"})
	if r.IntN(5) > 0 {
		c.Image = "example.com/sidecar:1.0"
	}
	c.RestartPolicy = nil
	if !init {
		c.RestartPolicyRules = nil
	} else if r.IntN(2) == 0 {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return v1alpha1.SidecarContainer{Container: c}
}

var volumeSourceType = reflect.TypeOf(corev1.VolumeSource{})

// randomVolume returns a volume with one random source (sometimes none or two).
func randomVolume(r *rand.Rand, f *randfill.Filler) corev1.Volume {
	v := corev1.Volume{Name: pick(r, []string{"vol-a", "vol-b", "vol-c", "Bad_Name!", "", "vol-a"})}
	src := reflect.ValueOf(&v.VolumeSource).Elem()
	n := 1
	switch r.IntN(20) {
	case 0:
		n = 0
	case 1:
		n = 2
	}
	for range n {
		fv := src.Field(r.IntN(src.NumField()))
		fv.Set(reflect.New(fv.Type().Elem()))
		f.Fill(fv.Interface())
		normalize(r, fv, volumeSourceType, volumeSourceType.Field(0).Name)
	}
	return v
}

// uniqueVolumeNames reports whether no two volumes share a name: the injector keeps the last of
// a name, so kube-apiserver never sees duplicates, which this server rejects (TestStricterThanKube).
func uniqueVolumeNames(in sidecars) bool {
	seen := sets.New[string]()
	for _, v := range in.Volumes {
		if seen.Has(v.Name) {
			return false
		}
		seen.Insert(v.Name)
	}
	return true
}

// generated runs n generated cases and fails on every disagreement.
func generated(t *testing.T, n int, nilChance float64, gen func(r *rand.Rand, f *randfill.Filler) (sidecars, string)) {
	seed := envInt("PODVALIDATION_SEED", 1)
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	f := filler(int64(seed), nilChance)
	start := time.Now()
	var ran, rejected, podDependent, podLevel, failures int
	for i := 0; i < n; i++ {
		in, desc := gen(r, f)
		if !uniqueVolumeNames(in) {
			continue
		}
		ran++
		res := run(t, in)
		if res.rejectedByKube() {
			rejected++
		}
		podDependent += len(res.podDependent)
		podLevel += len(res.podLevel)
		if !res.same() {
			failures++
			if failures <= 10 {
				t.Errorf("case %d (%s): this server and kube-apiserver disagree:\n%s", i, desc, res)
			}
		}
	}
	if failures > 10 {
		t.Errorf("%d more disagreements", failures-10)
	}
	t.Logf("%d generated cases (seed %d), %d rejected by kube-apiserver, %d pod-dependent and %d pod-level kube-apiserver errors ignored, %v",
		ran, seed, rejected, podDependent, podLevel, time.Since(start).Round(time.Millisecond))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// TestMutatedBaseline changes one to three values of the valid baseline (every container field
// and volume kind) to values from the pools.
func TestMutatedBaseline(t *testing.T) {
	generated(t, envInt("PODVALIDATION_CASES", 3000), 0.8, func(r *rand.Rand, f *randfill.Filler) (sidecars, string) {
		in := baseline()
		desc := ""
		for range 1 + r.IntN(3) {
			desc += mutate(r, f, &in) + "; "
		}
		return in, desc
	})
}

// TestRandomSidecars fills containers and volumes with randfill (sparse, pool-based values).
func TestRandomSidecars(t *testing.T) {
	generated(t, envInt("PODVALIDATION_CASES", 3000), 0.8, func(r *rand.Rand, f *randfill.Filler) (sidecars, string) {
		var in sidecars
		for range 1 + r.IntN(2) {
			in.Containers = append(in.Containers, randomContainer(r, f, false))
		}
		for range r.IntN(2) {
			in.InitContainers = append(in.InitContainers, randomContainer(r, f, true))
		}
		for range r.IntN(3) {
			in.Volumes = append(in.Volumes, randomVolume(r, f))
		}
		return in, "random"
	})
}
