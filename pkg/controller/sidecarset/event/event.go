package event

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Pending is an event a round records once its status is written.
type Pending struct {
	Object  runtime.Object
	Type    string
	Reason  string
	Message string
}

// Normal returns a pending event of type Normal about obj.
func Normal(obj runtime.Object, reason, message string) Pending {
	return Pending{Object: obj, Type: corev1.EventTypeNormal, Reason: reason, Message: message}
}

// Warning returns a pending event of type Warning about obj.
func Warning(obj runtime.Object, reason, message string) Pending {
	return Pending{Object: obj, Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}

// Record records the events, in order; nothing without a recorder.
func Record(recorder record.EventRecorder, events []Pending) {
	if recorder == nil {
		return
	}
	for _, e := range events {
		recorder.Event(object(e.Object), e.Type, e.Reason, e.Message)
	}
}

// object returns the object an event is about: a NamespacedSidecarSet's events are its own, in
// its namespace, not those of the SidecarSet it takes part as.
func object(obj runtime.Object) runtime.Object {
	if ss, ok := obj.(*v1alpha1.SidecarSet); ok {
		if n := v1alpha1.AsNamespaced(ss); n != nil {
			return n
		}
	}
	return obj
}
