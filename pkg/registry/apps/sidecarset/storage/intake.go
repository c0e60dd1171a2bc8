package storage

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// Intake has kube-apiserver send the server the pods a SidecarSet write may concern before the
// write is stored (see injectionsync.Intake).
type Intake interface {
	// Open returns once kube-apiserver sends the server the pods of scope (apps.IntakeScopes: a
	// namespace, the pods with a label key, or "" for every pod).
	Open(ctx context.Context, scope string) error
}

// intakeOpener opens the intake for the writes of a store that change what a SidecarSet injects
// (create, update, patch, server-side apply, delete, the /rollout actions), once they have passed
// validation and admission: it follows the last validation the generic registry runs before it
// stores (or deletes) an object, so that a write refused by the strategy's validation, the
// admission chain (quota, the namespace cap, the cluster's policies) or authorization opens
// nothing. A NamespacedSidecarSet opens it for its own namespace alone, a cluster SidecarSet for
// the pods with the label key its versions written (new, and replaced or deleted) require, or for
// every pod when one requires none (apps.IntakeScopes); dry runs never open it.
// A delete opens it too: kube-apiserver may still run a policy compiled from the SidecarSet
// deleted (one that stops injecting a SidecarSet waits for the webhooks), and the webhook takes
// what that policy injected out of the pods it receives.
type intakeOpener struct {
	intake Intake // nil: nothing to open
}

// afterCreate returns validate followed by the intake's opening for the object created.
func (o intakeOpener) afterCreate(validate rest.ValidateObjectFunc, dryRun []string) rest.ValidateObjectFunc {
	return o.after(validate, dryRun, "written")
}

// afterDelete returns validate followed by the intake's opening for the object deleted.
func (o intakeOpener) afterDelete(validate rest.ValidateObjectFunc, dryRun []string) rest.ValidateObjectFunc {
	return o.after(validate, dryRun, "deleted")
}

// after returns validate followed by the intake's opening for the object (done: what the write
// does to it, for the error).
func (o intakeOpener) after(validate rest.ValidateObjectFunc, dryRun []string, done string) rest.ValidateObjectFunc {
	if o.intake == nil || len(dryRun) > 0 {
		return validate
	}
	return func(ctx context.Context, obj runtime.Object) error {
		if validate != nil {
			if err := validate(ctx, obj); err != nil {
				return err
			}
		}
		return o.open(ctx, done, obj)
	}
}

// afterUpdate returns validate followed by the intake's opening for the object updated.
func (o intakeOpener) afterUpdate(validate rest.ValidateObjectUpdateFunc, dryRun []string) rest.ValidateObjectUpdateFunc {
	if o.intake == nil || len(dryRun) > 0 {
		return validate
	}
	return func(ctx context.Context, obj, old runtime.Object) error {
		if validate != nil {
			if err := validate(ctx, obj, old); err != nil {
				return err
			}
		}
		return o.open(ctx, "written", obj, old)
	}
}

// open opens the intake for the scopes of the versions of an object a write concerns (the first
// is the one written), refusing the write (done: what it would have done to the object) with 503
// when it cannot.
func (o intakeOpener) open(ctx context.Context, done string, versions ...runtime.Object) error {
	m, err := meta.Accessor(versions[0])
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var sels []*metav1.LabelSelector
	for _, v := range versions {
		if ss, ok := v.(*apps.SidecarSet); ok {
			sels = append(sels, ss.Spec.Selector)
		}
	}
	for _, scope := range apps.IntakeScopes(m.GetNamespace(), sels...) {
		if err := o.intake.Open(ctx, scope); err != nil {
			return apierrors.NewServiceUnavailable("the SidecarSet was not " + done + ": the injection webhooks could not be made to receive its pods (retry): " + err.Error())
		}
	}
	return nil
}
