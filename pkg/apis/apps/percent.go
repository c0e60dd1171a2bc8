package apps

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePercent parses a percentage of the SidecarSet API ("25%", "12.5%": updateStrategy's
// partition and maxUnavailable) into its number (25, 12.5). The rollout and the injector both
// read percentages with it.
func ParsePercent(s string) (float64, error) {
	num, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf("invalid value %q: not a percentage", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid value %q: %w", s, err)
	}
	return v, nil
}
