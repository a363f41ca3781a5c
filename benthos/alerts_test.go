package benthos_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapmetrics"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/tier"
)

// gapSeries are the gap metrics a pod's fleet role would export over the
// tier on state (gapmetrics over its coverage table and gap states, the
// source's extent 0..n-1 of orders/0), one refresh, by series as
// `name{sink,kind}`.
func gapSeries(t *testing.T, state string, n uint64) map[string]float64 {
	t.Helper()
	ctx := context.Background()
	tr, closer, err := tier.Open(ctx, tier.Settings{State: state, Writer: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	table, ok := tr.(*iceberg.Table)
	if !ok {
		t.Fatalf("the tier on %q is a %T, want the coverage table", state, tr)
	}
	g, err := gapmetrics.New(gapmetrics.Options{Table: table,
		Extents: func() []coverage.Extent { return []coverage.Extent{{Topic: "orders", Partition: 0, End: n}} }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(g)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "covmirror_sink_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// series names a gap series of gapSeries' map.
func series(name, sink, kind string) string {
	return fmt.Sprintf("%s{kind=%q,sink=%q}", name, kind, sink)
}

// assertAlerts evaluates deploy/alerts.yaml's rules under promtool over
// the series held constant for 20 minutes (past every rule's `for`) and
// fails unless exactly the alerts firing, of sink, are firing. Without
// promtool it skips this check (the callers assert the series the rules
// read as well), unless COVMIRROR_REQUIRE_PROMTOOL is set: then it fails.
func assertAlerts(t *testing.T, values map[string]float64, sink string, firing ...string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("COVMIRROR_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("COVMIRROR_REQUIRE_PROMTOOL is set and promtool is not on PATH (%v): install Debian's prometheus package", err)
		}
		t.Logf("promtool is not on PATH: the alert rules are not evaluated (COVMIRROR_REQUIRE_PROMTOOL=1 makes this a failure)")
		return
	}
	rulesFile, err := filepath.Abs(filepath.Join("..", "deploy", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("deploy/alerts.yaml: %v", err)
	}
	type sample struct {
		Labels string  `yaml:"labels"`
		Value  float64 `yaml:"value"`
	}
	want := []sample{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !slices.Contains(firing, r.Alert) {
				continue
			}
			labels := []string{fmt.Sprintf("alertname=%q", r.Alert), `alertstate="firing"`, fmt.Sprintf("sink=%q", sink)}
			for k, v := range r.Labels {
				labels = append(labels, fmt.Sprintf("%s=%q", k, v))
			}
			want = append(want, sample{Labels: "ALERTS{" + strings.Join(labels, ",") + "}", Value: 1})
		}
	}
	if len(want) != len(firing) {
		t.Fatalf("deploy/alerts.yaml has rules of %d of the alerts %v", len(want), firing)
	}
	type input struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	}
	var inputs []input
	for name, v := range values {
		inputs = append(inputs, input{Series: name, Values: fmt.Sprintf("%gx20", v)})
	}
	slices.SortFunc(inputs, func(a, b input) int { return strings.Compare(a.Series, b.Series) })
	test := map[string]any{
		"rule_files":          []string{rulesFile},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval":     "1m",
			"input_series": inputs,
			"promql_expr_test": []any{map[string]any{
				"expr": `ALERTS{alertstate="firing"}`, "eval_time": "20m", "exp_samples": want,
			}},
		}},
	}
	text, err := yaml.Marshal(test)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "alerts_test.yaml")
	if err := os.WriteFile(file, text, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("deploy/alerts.yaml over the exported gap series, want firing exactly %v: %v\n%s\ninput:\n%s", firing, err, out, text)
	}
}
