package sidecarset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TableConvertor prints SidecarSets as kubectl shows them: NAME MATCHED UPDATED READY AGE, and with
// -o wide also UPDATED-READY, REVISION, PAUSED and PATH.
type TableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the SidecarSet."},
	{Name: "Matched", Type: "integer", Description: "The number of pods matched."},
	{Name: "Updated", Type: "integer", Description: "The number of pods matched and updated."},
	{Name: "Ready", Type: "integer", Description: "The number of pods matched and ready."},
	{Name: "Age", Type: "date", Description: "Time since the SidecarSet was created."},
	{Name: "Updated-Ready", Type: "integer", Priority: 1, Description: "The number of pods matched, updated and ready."},
	{Name: "Revision", Type: "string", Priority: 1, Description: "The latest revision."},
	{Name: "Paused", Type: "boolean", Priority: 1, Description: "Whether in-place upgrades are paused."},
	{Name: "Path", Type: "string", Priority: 1, Description: "What injects new pods: Policy (kube-apiserver, through a MutatingAdmissionPolicy), Webhook, or None (from the Injected condition)."},
}

// injectionPath is the path the Injected condition names: its reason while True, None while
// False, "" before the controller has written it.
func injectionPath(conditions []metav1.Condition) string {
	c := meta.FindStatusCondition(conditions, "Injected")
	switch {
	case c == nil:
		return ""
	case c.Status == metav1.ConditionTrue:
		return c.Reason
	}
	return "None"
}

// ConvertToTable converts a SidecarSet or a NamespacedSidecarSet, or a list of them, to a table.
func (TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if o, ok := opts.(*metav1.TableOptions); !ok || !o.NoHeaders {
		table.ColumnDefinitions = columns
	}
	var err error
	table.Rows, err = metatable.MetaToTableRow(obj, func(obj runtime.Object, m metav1.Object, name, age string) ([]interface{}, error) {
		spec, st := specAndStatus(obj)
		return []interface{}{name, int64(st.MatchedPods), int64(st.UpdatedPods), int64(st.ReadyPods), age,
			int64(st.UpdatedReadyPods), st.LatestRevision, spec.UpdateStrategy.Paused, injectionPath(st.Conditions)}, nil
	})
	if err != nil {
		return nil, err
	}
	if l, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = l.GetResourceVersion()
		table.Continue = l.GetContinue()
		table.RemainingItemCount = l.GetRemainingItemCount()
	} else if o, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = o.GetResourceVersion()
	}
	return table, nil
}

// specAndStatus returns the spec and status of a SidecarSet or a NamespacedSidecarSet: both print
// the same columns.
func specAndStatus(obj runtime.Object) (*apps.SidecarSetSpec, *apps.SidecarSetStatus) {
	if n, ok := obj.(*apps.NamespacedSidecarSet); ok {
		return &n.Spec, &n.Status
	}
	ss := obj.(*apps.SidecarSet)
	return &ss.Spec, &ss.Status
}
