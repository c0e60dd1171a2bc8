package apiserver

import (
	"testing"

	"k8s.io/client-go/util/watchlist"

	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// TestOwnInformersList: the reflectors of the server's own informers read with paged lists, not
// watch-lists (client-go's default), which this server serves by decoding every stored object in
// one goroutine: at 50,000 SidecarSets the revisions' watch-list held a new leader 10 s longer.
func TestOwnInformersList(t *testing.T) {
	var client versioned.Interface = &versioned.Clientset{}
	if watchlist.DoesClientNotSupportWatchListSemantics(client) {
		t.Fatal("the generated clientset already opts out of watch-lists: the test proves nothing")
	}
	if !watchlist.DoesClientNotSupportWatchListSemantics(listing{client}) {
		t.Error("the informers' client lets the reflectors use watch-lists")
	}
}
