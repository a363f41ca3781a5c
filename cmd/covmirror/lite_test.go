package main

import (
	"slices"
	"testing"

	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/internal/settings"
)

// TestLiteSharesTheSettings: covmirror-lite reads covmirror's configuration
// file and skips covmirror's keys by name (lite.CovmirrorKeys). A key added
// to covmirror's table and not there would make covmirror-lite refuse a
// file covmirror takes; one listed there and gone from covmirror would let
// covmirror-lite take a key nobody checks. Its own settings must be
// covmirror's: the same flag, variable, kind and default.
func TestLiteSharesTheSettings(t *testing.T) {
	ours := map[string]settings.Setting{}
	for _, s := range lite.Table() {
		ours[s.Key] = s
	}
	var want []string
	for _, s := range table {
		if l, ok := ours[s.Key]; ok {
			if l.FlagName() != s.FlagName() || l.EnvName() != s.EnvName() || l.Kind != s.Kind || l.Default != s.Default {
				t.Errorf("covmirror-lite's setting %q is not covmirror's: flag %s/%s, env %s/%s, kind %v/%v, default %q/%q",
					s.Key, l.FlagName(), s.FlagName(), l.EnvName(), s.EnvName(), l.Kind, s.Kind, l.Default, s.Default)
			}
			delete(ours, s.Key)
			continue
		}
		for _, k := range append([]string{s.Key}, s.Aliases...) {
			if s.Kind == settings.Map {
				k += ".*"
			}
			want = append(want, k)
		}
	}
	for k := range ours {
		t.Errorf("covmirror-lite has a setting %q covmirror lacks", k)
	}
	got := slices.Sorted(slices.Values(lite.CovmirrorKeys))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("lite.CovmirrorKeys is %q; covmirror's keys that covmirror-lite does not take are %q", got, want)
	}
}
