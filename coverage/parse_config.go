package coverage

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ParseRegime reads a source regime as configuration spells it: stored or
// broker-managed (Regime.String).
func ParseRegime(s string) (Regime, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case Stored.String():
		return Stored, nil
	case BrokerManaged.String():
		return BrokerManaged, nil
	}
	return 0, fmt.Errorf("regime %q: use stored or broker-managed", s)
}

// ParseSources reads declared sources, regime by name, in name order, and
// checks them as SourceRegimes does.
func ParseSources(regimes map[string]string) ([]Source, error) {
	out := make([]Source, 0, len(regimes))
	for _, name := range slices.Sorted(maps.Keys(regimes)) {
		regime, err := ParseRegime(regimes[name])
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", name, err)
		}
		out = append(out, Source{Name: name, Regime: regime})
	}
	if _, err := SourceRegimes(out); err != nil {
		return nil, err
	}
	return out, nil
}

// ParseStart reads a stream's declared first batch id: the start an
// extent of topic reported without one takes (ParseExtentsStarting).
func ParseStart(topic, n string) (uint64, error) {
	if err := (Extent{Topic: topic}).Validate(); err != nil {
		return 0, fmt.Errorf("stream start of %q: %w", topic, err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(n), 10, 64)
	if err != nil || v > MaxBatchEnd {
		return 0, fmt.Errorf("stream start of %q: %q is not a batch id (0 to %d)", topic, n, uint64(MaxBatchEnd))
	}
	return v, nil
}
