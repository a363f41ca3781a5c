package settings

import (
	"errors"
	"strings"
)

// nonEmptyValue is a NonEmpty String's flag.
type nonEmptyValue struct{ p *string }

func (f nonEmptyValue) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty: give a value, or leave the flag out for the default")
	}
	*f.p = s
	return nil
}

func (f nonEmptyValue) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

// collection is a List's or Map's flag: its first value replaces the
// fallback, later ones add to it (or, for a List that is not Repeatable,
// the once-rule of the caller refuses them).
type collection struct{ v *value }

func (c collection) String() string {
	if c.v == nil {
		return ""
	}
	if c.v.s.Kind == Map {
		return ""
	}
	return strings.Join(c.v.list, ",")
}

func (c collection) Set(x string) error {
	v := c.v
	if !v.fromFlag {
		v.fromFlag, v.list, v.m = true, nil, map[string]string{}
	}
	if v.s.Kind == Map {
		return v.s.Add(v.m, x)
	}
	if v.s.Repeatable {
		v.list = append(v.list, strings.TrimSpace(x))
		return nil
	}
	list, err := v.s.parseList(x)
	v.list = append(v.list, list...)
	return err
}

// SplitList is a comma-separated list's non-empty items, trimmed.
func SplitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
