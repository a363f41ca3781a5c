package gapmetrics

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/covmirror/covmirror/reconcile"
)

// alertRules is the shape of a Prometheus rule file, as far as checked.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var (
	metricName = regexp.MustCompile(`\bcovmirror_[a-z0-9_]+\b`)
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
)

// describedMetrics is every metric name the collectors describe; a
// histogram's series names too.
func describedMetrics(t *testing.T, cs ...prometheus.Collector) map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	out := map[string]bool{}
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		out[m[1]] = true
		if m[1] == "covmirror_checkpoint_duration_seconds" { // the histogram
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[m[1]+s] = true
			}
		}
	}
	return out
}

// TestAlertsNameExistingMetrics: every metric deploy/alerts.yaml names is
// one the collectors describe, so the alerts cannot drift from the code;
// every rule says what to do; the alerts the deployment relies on exist.
func TestAlertsNameExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile("../deploy/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("deploy/alerts.yaml: %v", err)
	}
	e := newEnv(t)
	m := e.Owner(t, "", "pod-a")
	defer m.Close()
	g, err := New(Options{Table: e.Table})
	if err != nil {
		t.Fatal(err)
	}
	known := describedMetrics(t, m.Collector(), g, reconcile.NewMetrics(0, nil))
	var alerts []string
	for _, group := range rules.Groups {
		for _, r := range group.Rules {
			alerts = append(alerts, r.Alert)
			names := metricName.FindAllString(r.Expr, -1)
			if r.Alert == "" || len(names) == 0 {
				t.Errorf("rule %q (%q) names no covmirror metric", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !known[n] {
					t.Errorf("alert %s uses %s, which no collector describes", r.Alert, n)
				}
			}
			for _, text := range r.Annotations {
				for _, n := range metricName.FindAllString(text, -1) {
					if !known[n] {
						t.Errorf("alert %s's annotations name %s, which no collector describes", r.Alert, n)
					}
				}
			}
			if r.Annotations["summary"] == "" || len(r.Annotations["description"]) < 80 {
				t.Errorf("alert %s: want a summary and a description saying what to do", r.Alert)
			}
			if r.For == "" || r.Labels["severity"] == "" {
				t.Errorf("alert %s: want a for duration and a severity label", r.Alert)
			}
		}
	}
	for _, want := range []string{"CovmirrorCheckpointStalled", "CovmirrorGapTooOld", "CovmirrorPendingBatchesGrowing", "CovmirrorGapRefreshFailing"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("deploy/alerts.yaml has no alert %s (has %v)", want, alerts)
		}
	}
}
