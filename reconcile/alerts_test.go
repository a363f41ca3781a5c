package reconcile_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/reconcile"
)

// TestAlertsNameReconcileMetrics: every reconcile metric deploy/alerts.yaml
// names is one Metrics describes, so the alerts cannot drift from the code.
func TestAlertsNameReconcileMetrics(t *testing.T) {
	raw, err := os.ReadFile("../deploy/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 16)
	go func() { reconcile.NewMetrics(0, nil).Describe(ch); close(ch) }()
	known := map[string]bool{}
	for d := range ch {
		known[regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]] = true
	}
	names := regexp.MustCompile(`\bcovmirror_reconcile_[a-z0-9_]+\b`).FindAllString(string(raw), -1)
	if len(names) == 0 {
		t.Fatal("deploy/alerts.yaml names no reconcile metric")
	}
	for _, n := range names {
		if !known[n] {
			t.Errorf("deploy/alerts.yaml names %s, which reconcile.Metrics does not describe (it describes %v)", n, known)
		}
	}
}
