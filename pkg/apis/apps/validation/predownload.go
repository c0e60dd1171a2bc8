package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/predownload"
)

// validatePreDownload validates the pre-download annotations of a SidecarSet
// (predownload.Parse).
func validatePreDownload(annotations map[string]string) field.ErrorList {
	_, errs := predownload.Parse(annotations, field.NewPath("metadata", "annotations"))
	return errs
}

// forbidPreDownload refuses the pre-download annotations on a NamespacedSidecarSet: its pulls
// would run in the server's namespace, with that namespace's image pull secrets, for images a
// namespace editor names.
func forbidPreDownload(annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("metadata", "annotations")
	for _, key := range []string{predownload.ParallelismAnnotation, predownload.TimeoutAnnotation, predownload.MinUpdatedReadyAnnotation} {
		if _, ok := annotations[key]; ok {
			errs = append(errs, field.Forbidden(path.Key(key),
				"image pre-download is for cluster SidecarSets only: its pull pods run in the server's namespace"))
		}
	}
	return errs
}
