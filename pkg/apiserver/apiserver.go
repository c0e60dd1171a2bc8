// Package apiserver assembles the SidecarSet API server: the scheme, the apps.kruise.io and
// admission.kruise.io API groups, their storage, and the post-start hooks that start informers and
// the controller.
package apiserver

import (
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/registry/admission/sidecarinjection"
	sidecarsetstorage "github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset/storage"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarsetrevision"
)

// AdmissionGroupVersion is the group version serving pod injection to kube-apiserver.
var AdmissionGroupVersion = schema.GroupVersion{Group: "admission.kruise.io", Version: "v1"}

var (
	// Scheme knows the apps.kruise.io types, AdmissionReview and the meta types.
	Scheme = runtime.NewScheme()
	// Codecs serializes with Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	utilruntime.Must(admissionv1.AddToScheme(Scheme))
	metav1.AddToGroupVersion(Scheme, AdmissionGroupVersion)
	utilruntime.Must(Scheme.SetVersionPriority(AdmissionGroupVersion))
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}

// ExtraConfig holds the server's own configuration.
type ExtraConfig struct {
	// Reviewer answers pod injection requests.
	Reviewer sidecarinjection.Reviewer
	// RolloutViewer computes GET sidecarsets/<name>/rollout; nil serves the SidecarSet's own view.
	RolloutViewer sidecarsetstorage.RolloutViewer

	storageGate *StorageGate // see Config.ServeWithoutStorage
}

// Config is the server configuration.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
}

// CompletedConfig is a Config after Complete; only it can build a server.
type CompletedConfig struct {
	*completedConfig
}

// Server is the running SidecarSet API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	// Revisions is the writable store of SidecarSetRevisions, for the in-process controller.
	Revisions *genericregistry.Store
}

// Complete fills in the fields that are not set.
func (cfg *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{cfg.GenericConfig.Complete(), &cfg.ExtraConfig}}
}

// New builds the server and installs both API groups.
func (c completedConfig) New() (*Server, error) {
	generic, err := c.GenericConfig.New("sidecarset-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := &Server{GenericAPIServer: generic}
	optsGetter := c.GenericConfig.RESTOptionsGetter
	if s.Revisions, err = sidecarsetrevision.NewStore(Scheme, optsGetter); err != nil {
		return nil, fmt.Errorf("sidecarsetrevisions storage: %w", err)
	}
	sets, err := sidecarsetstorage.NewStorage(Scheme, optsGetter, s.Revisions, c.ExtraConfig.RolloutViewer, c.GenericConfig.AdmissionControl)
	if err != nil {
		return nil, fmt.Errorf("sidecarsets storage: %w", err)
	}

	appsGroup := genericapiserver.NewDefaultAPIGroupInfo(apps.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	appsGroup.VersionedResourcesStorageMap["v1alpha1"] = map[string]rest.Storage{
		"sidecarsets":           sets.SidecarSet,
		"sidecarsets/status":    sets.Status,
		"sidecarsets/revisions": sets.Revisions,
		"sidecarsets/rollout":   sets.Rollout,
		"sidecarsetrevisions":   sidecarsetrevision.NewReadOnlyREST(s.Revisions),
	}
	if err := generic.InstallAPIGroup(&appsGroup); err != nil {
		return nil, err
	}

	admissionGroup := genericapiserver.NewDefaultAPIGroupInfo(AdmissionGroupVersion.Group, Scheme, metav1.ParameterCodec, Codecs)
	admissionGroup.VersionedResourcesStorageMap[AdmissionGroupVersion.Version] = map[string]rest.Storage{
		"sidecarinjections": sidecarinjection.NewREST(c.ExtraConfig.Reviewer),
	}
	if err := generic.InstallAPIGroup(&admissionGroup); err != nil {
		return nil, err
	}
	if gate := c.ExtraConfig.storageGate; gate != nil {
		generic.AddPostStartHookOrDie("sidecarset-storage-gate", func(hc genericapiserver.PostStartHookContext) error {
			go gate.Run(hc)
			return nil
		})
	}
	return s, nil
}

// ServeWithoutStorage, called once the generic options are applied, keeps the server live and
// ready while its etcd is down (DecoupleFromStorage) and answers requests for stored resources
// meanwhile with a clear 503 (StorageGate).
func (c *Config) ServeWithoutStorage() {
	etcd := DecoupleFromStorage(&c.GenericConfig.Config)
	if etcd == nil {
		return
	}
	gate := NewStorageGate(etcd, time.Second) // the etcd check probes at most once a second
	c.ExtraConfig.storageGate = gate
	next := c.GenericConfig.BuildHandlerChainFunc
	c.GenericConfig.BuildHandlerChainFunc = func(h http.Handler, gc *genericapiserver.Config) http.Handler {
		return next(gate.Wrap(h), gc)
	}
}
