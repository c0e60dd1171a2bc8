package rollout

import (
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// ResolvePartition resolves updateStrategy.partition against total matched pods as OpenKruise
// does (§5.7): an integer as is; a percentage rounded up, except that a percentage other than
// exactly "100%" that would keep every pod of more than one keeps one less (so at least one pod
// is upgraded); clamped to [0, total]. nil or unparsable means 0.
func ResolvePartition(p *intstr.IntOrString, total int32) int32 {
	if p == nil {
		return 0
	}
	var v int32
	if p.Type == intstr.Int {
		v = p.IntVal
	} else {
		pct, err := apps.ParsePercent(p.StrVal)
		if err != nil {
			return 0
		}
		// Clamp before converting: a huge percentage ("99999999999%" passes validation) must
		// keep every pod, not wrap around int32 and upgrade them all.
		switch f := math.Ceil(pct * float64(total) / 100); {
		case !(f >= 0): // negative or NaN
			v = 0
		case f > float64(total): // no total-1 rule: OpenKruise applies it to exactly total
			v = total
		default:
			v = int32(f)
			if total > 1 && v == total && p.StrVal != "100%" {
				v = total - 1
			}
		}
	}
	return clamp(v, 0, total)
}

// ResolveMaxUnavailable resolves updateStrategy.maxUnavailable against total matched pods: an
// integer as is, a percentage rounded up (so any positive percentage of a non-empty set allows at
// least one pod), 1 when unset. Unparsable values mean 1.
func ResolveMaxUnavailable(u *intstr.IntOrString, total int32) int32 {
	if u == nil {
		return 1
	}
	if u.Type == intstr.Int {
		return max(u.IntVal, 0)
	}
	pct, err := apps.ParsePercent(u.StrVal)
	if err != nil {
		return 1
	}
	f := math.Ceil(pct * float64(total) / 100)
	switch {
	case !(f > 0): // zero, negative or NaN
		return 0
	case f > math.MaxInt32: // converting would wrap around
		return math.MaxInt32
	}
	return int32(f)
}

func clamp(v, lo, hi int32) int32 {
	return min(max(v, lo), hi)
}
