package rollout

import (
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
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
		pct, ok := parsePercent(p.StrVal)
		if !ok {
			return 0
		}
		v = int32(math.Ceil(pct * float64(total) / 100))
		if total > 1 && v == total && p.StrVal != "100%" {
			v = total - 1
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
	pct, ok := parsePercent(u.StrVal)
	if !ok {
		return 1
	}
	return max(int32(math.Ceil(pct*float64(total)/100)), 0)
}

func parsePercent(s string) (float64, bool) {
	if !strings.HasSuffix(s, "%") {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	return v, err == nil
}

func clamp(v, lo, hi int32) int32 {
	return min(max(v, lo), hi)
}
