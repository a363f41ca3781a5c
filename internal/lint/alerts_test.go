package lint

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestAlertRules: deploy/alerts.yaml passes promtool's check, and its unit
// tests, deploy/alerts_test.yaml, pass and hold a firing and a quiet case
// of every rule. Without promtool the test skips, unless
// COVMIRROR_REQUIRE_PROMTOOL is set (CI sets it): then it fails.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("COVMIRROR_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("COVMIRROR_REQUIRE_PROMTOOL is set and promtool is not on PATH (%v): install Debian's prometheus package", err)
		}
		t.Skip("promtool is not on PATH: install Debian's prometheus package to test the alert rules (COVMIRROR_REQUIRE_PROMTOOL=1 makes this a failure)")
	}
	deploy := filepath.Join(moduleRoot(t), "deploy")
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = deploy
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v in deploy: %v\n%s", args, err, out)
		}
	}

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var tests struct {
		Tests []struct {
			Cases []struct {
				Alert  string `yaml:"alertname"`
				Alerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	for file, into := range map[string]any{"alerts.yaml": &rules, "alerts_test.yaml": &tests} {
		raw, err := os.ReadFile(filepath.Join(deploy, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatalf("deploy/%s: %v", file, err)
		}
	}
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, c := range tc.Cases {
			if len(c.Alerts) > 0 {
				firing[c.Alert] = true
			} else {
				quiet[c.Alert] = true
			}
		}
	}
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			if !firing[r.Alert] || !quiet[r.Alert] {
				t.Errorf("deploy/alerts_test.yaml: rule %s wants a case where it fires and one where it does not (firing %v, quiet %v)", r.Alert, firing[r.Alert], quiet[r.Alert])
			}
		}
	}
	for name := range firing {
		if !slices.Contains(names, name) {
			t.Errorf("deploy/alerts_test.yaml tests %s, which deploy/alerts.yaml has no rule of", name)
		}
	}
}
