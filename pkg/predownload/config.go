// Package predownload plans the pre-download of a SidecarSet's new sidecar images onto the nodes
// of the pods its rollout will upgrade, so that an in-place upgrade waits for a container restart
// only, not for an image pull. It is a pure core: from the pods still to upgrade in the rollout's
// order, the images their nodes report, the pull pods that exist and the outcomes of earlier
// pulls, it says which pull pods to create and to delete, which pulls ended, and each pod's state
// (PreDownloading: its upgrade waits for a pull; PreDownloaded: its node has the images).
//
// Invariants of a plan: at most Config.Parallelism pulls run at once for a SidecarSet (those
// found running plus those created); at most one pull per node and image; pulls start in the
// rollout's order (the pods it upgrades next first); no pull starts before
// Config.MinUpdatedReady pods are updated and ready; a pull that failed or ran past
// Config.Timeout is deleted and never holds an upgrade again; a pull no pod still needs is
// deleted.
package predownload

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Annotations of a SidecarSet that turn pre-download on, with OpenKruise's names for CloneSet,
// Advanced StatefulSet and Advanced DaemonSet. Pre-download is on when any of them is set.
const (
	// ParallelismAnnotation is how many pulls run at once for the SidecarSet, across the
	// cluster: a non-negative integer, 1 when unset; 0 starts none (upgrades then wait for none).
	ParallelismAnnotation = "apps.kruise.io/image-predownload-parallelism"
	// TimeoutAnnotation is how long, in seconds, an upgrade waits for its node's pull before it
	// goes on without: a positive integer, 300 when unset (OpenKruise's default for the
	// annotation).
	TimeoutAnnotation = "apps.kruise.io/image-predownload-timeout-seconds"
	// MinUpdatedReadyAnnotation is how many pods must be updated and ready before pulls start:
	// a non-negative integer, or a percentage of the pods the SidecarSet manages (rounded up);
	// 0 when unset. Until then upgrades wait for no pull: the first pods are the canary.
	MinUpdatedReadyAnnotation = "apps.kruise.io/image-predownload-min-updated-ready-pods"
)

// Defaults of the annotations.
const (
	DefaultParallelism = 1
	DefaultTimeout     = 300 * time.Second
)

// maxTimeoutSeconds bounds the timeout: a day.
const maxTimeoutSeconds = 24 * 60 * 60

// Config is a SidecarSet's pre-download configuration.
type Config struct {
	// Parallelism is how many pulls run at once for the SidecarSet; 0 runs none.
	Parallelism int32
	// Timeout is how long an upgrade waits for a pull that runs.
	Timeout time.Duration
	// MinUpdatedReady is how many pods must be updated and ready before pulls start.
	MinUpdatedReady intstr.IntOrString
}

// Parse returns the pre-download configuration the annotations ask for, nil when none of them is
// set, and the errors of their values under path (the metadata.annotations of the object).
func Parse(annotations map[string]string, path *field.Path) (*Config, field.ErrorList) {
	p, hasP := annotations[ParallelismAnnotation]
	t, hasT := annotations[TimeoutAnnotation]
	m, hasM := annotations[MinUpdatedReadyAnnotation]
	if !hasP && !hasT && !hasM {
		return nil, nil
	}
	cfg := &Config{Parallelism: DefaultParallelism, Timeout: DefaultTimeout}
	var errs field.ErrorList
	if hasP {
		n, err := strconv.ParseInt(p, 10, 32)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(path.Key(ParallelismAnnotation), p, "must be a non-negative integer"))
		case n < 0:
			errs = append(errs, field.Invalid(path.Key(ParallelismAnnotation), p, "must be a non-negative integer"))
		default:
			cfg.Parallelism = int32(n)
		}
	}
	if hasT {
		n, err := strconv.ParseInt(t, 10, 32)
		if err != nil || n < 1 || n > maxTimeoutSeconds {
			errs = append(errs, field.Invalid(path.Key(TimeoutAnnotation), t,
				fmt.Sprintf("must be an integer number of seconds from 1 to %d", maxTimeoutSeconds)))
		} else {
			cfg.Timeout = time.Duration(n) * time.Second
		}
	}
	if hasM {
		v, err := minUpdatedReady(m)
		if err != "" {
			errs = append(errs, field.Invalid(path.Key(MinUpdatedReadyAnnotation), m, err))
		} else {
			cfg.MinUpdatedReady = v
		}
	}
	return cfg, errs
}

// minUpdatedReady parses a non-negative integer or a percentage from 0% to 100%.
func minUpdatedReady(s string) (intstr.IntOrString, string) {
	const msg = "must be a non-negative integer or a percentage from 0% to 100%"
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		if n < 0 {
			return intstr.IntOrString{}, msg
		}
		return intstr.FromInt32(int32(n)), ""
	}
	if len(utilvalidation.IsValidPercent(s)) > 0 {
		return intstr.IntOrString{}, msg
	}
	if pct, _ := strconv.Atoi(s[:len(s)-1]); pct > 100 {
		return intstr.IntOrString{}, msg
	}
	return intstr.FromString(s), ""
}

// MinUpdatedReadyOf resolves MinUpdatedReady over the total of pods the SidecarSet manages: a
// percentage is rounded up.
func (c *Config) MinUpdatedReadyOf(total int32) int32 {
	v := c.MinUpdatedReady
	if v.Type == intstr.Int {
		return v.IntVal
	}
	pct, err := strconv.Atoi(v.StrVal[:max(0, len(v.StrVal)-1)])
	if err != nil {
		return 0
	}
	return int32(math.Ceil(float64(pct) * float64(total) / 100))
}
