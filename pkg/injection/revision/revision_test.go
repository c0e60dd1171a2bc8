package revision

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

func TestLatestWithCustomVersion(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, r := range []struct {
		name, sidecarSet, version string
		number                    int64
	}{
		{"ss-a", "ss", "v1", 1},
		{"ss-c", "ss", "v1", 3},
		{"ss-b", "ss", "v2", 2},
		{"other-a", "other", "v1", 9},
	} {
		if err := indexer.Add(&v1alpha1.SidecarSetRevision{
			ObjectMeta: metav1.ObjectMeta{Name: r.name, Labels: map[string]string{
				v1alpha1.SidecarSetNameLabel: r.sidecarSet, v1alpha1.SidecarSetCustomVersionLabel: r.version}},
			SidecarSetName: r.sidecarSet, Revision: r.number,
		}); err != nil {
			t.Fatal(err)
		}
	}
	l := Lister{Revisions: listers.NewSidecarSetRevisionLister(indexer)}
	for _, tc := range []struct {
		sidecarSet, version, want, err string
	}{
		{sidecarSet: "ss", version: "v1", want: "ss-c"},
		{sidecarSet: "ss", version: "v2", want: "ss-b"},
		{sidecarSet: "ss", version: "v3", err: `no revision of SidecarSet "ss" has label apps.kruise.io/sidecarset-custom-version=v3`},
		{sidecarSet: "none", version: "v1", err: `no revision of SidecarSet "none" has label apps.kruise.io/sidecarset-custom-version=v1`},
	} {
		got, err := l.LatestWithCustomVersion(tc.sidecarSet, tc.version)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s/%s: error %v, want %q", tc.sidecarSet, tc.version, err, tc.err)
			}
		case err != nil || got.Name != tc.want:
			t.Errorf("%s/%s: got %v (%v), want %s", tc.sidecarSet, tc.version, got, err, tc.want)
		}
	}
	if r, err := l.Revision("ss-b"); err != nil || r.Name != "ss-b" {
		t.Errorf("Revision(ss-b) = %v, %v", r, err)
	}
}
