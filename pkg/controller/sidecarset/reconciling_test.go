package sidecarset

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

// TestStatusDropsReconcilingOnceObserved: the Reconciling condition the server stores with a
// create stays until the controller observes a generation, and goes with that status write.
func TestStatusDropsReconcilingOnceObserved(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ready       bool
		reconciling bool
	}{
		{name: "injection in place: observed", ready: true, reconciling: false},
		{name: "injection not in place yet", ready: false, reconciling: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Generation: 1},
				Status: v1alpha1.SidecarSetStatus{Conditions: []metav1.Condition{{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "NotObserved"}}}}
			client := fake.NewSimpleClientset(ss)
			c := &Controller{client: client, injectionReady: func(*v1alpha1.SidecarSet) bool { return tc.ready }}
			next := ss.DeepCopy()
			next.Status.LatestRevision = "logs-1" // a change, so that the status is written
			if err := c.writeStatus(context.Background(), ss, next, nil); err != nil {
				t.Fatal(err)
			}
			got, err := client.AppsV1alpha1().SidecarSets().Get(context.Background(), "logs", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			has := false
			for _, c := range got.Status.Conditions {
				has = has || c.Type == "Reconciling"
			}
			if has != tc.reconciling || (got.Status.ObservedGeneration == 1) != tc.ready {
				t.Errorf("Reconciling present %v (want %v), observedGeneration %d", has, tc.reconciling, got.Status.ObservedGeneration)
			}
		})
	}
}
