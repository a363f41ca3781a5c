package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/reconcile"
)

// failing is a sink whose every check fails.
type failing struct{}

func (failing) Held(context.Context, coverage.Destination, []coverage.Range) (*coverage.RangeSet, error) {
	return nil, errors.New("sink unreachable")
}

// TestMetricsAfterADeletedRow: a scheduled job's metrics, scraped over
// HTTP, say how many batches the last run found claimed but absent per
// sink, count a failing sink's failed checks without lowering what it last
// showed, and move the success time only on a run without failures.
func TestMetricsAfterADeletedRow(t *testing.T) {
	const sink = "sqlsink"
	d := pgDialect(t)
	tier := fill(t, d, sink)
	record(t, tier, "whole", "ckpt-flaky")
	checker := d.checker(t, d.idsQuery(), reconcile.SQLOptions{})
	m := reconcile.NewMetrics(time.Minute, []string{sink, "whole"})
	var out bytes.Buffer
	job := reconcile.Job{Tier: tier, Checkers: map[string]reconcile.Checker{sink: checker, "whole": &holdsAll{}}, Options: fast(),
		Metrics: m, Stdout: &out, Stderr: io.Discard}
	if err := job.Once(ctx); !errors.Is(err, reconcile.ErrClaimedAbsent) {
		t.Fatalf("a run with deleted rows: %v", err)
	}
	const absent = `
# HELP covmirror_reconcile_claimed_absent_batches Batches committed coverage claims for the sink that the sink did not hold when a reconcile last asked about them.
# TYPE covmirror_reconcile_claimed_absent_batches gauge
covmirror_reconcile_claimed_absent_batches{sink="whole"} 0
covmirror_reconcile_claimed_absent_batches{sink="sqlsink"} 10
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(absent), "covmirror_reconcile_claimed_absent_batches"); err != nil {
		t.Fatal(err)
	}
	first := value(t, m, "covmirror_reconcile_last_success_timestamp_seconds")
	if first == 0 {
		t.Fatal("a run that checked everything is a success, whatever it found")
	}

	// The sink itself now fails: its count stays, its failures rise, and
	// the success time stays.
	job.Checkers[sink] = failing{}
	if err := job.Once(ctx); err == nil {
		t.Fatal("a failed check is a failure")
	}
	body := scrape(t, reconcile.MetricsHandler(m, "tok"), "tok")
	for _, want := range []string{
		`covmirror_reconcile_claimed_absent_batches{sink="sqlsink"} 10`,
		`covmirror_reconcile_failures_total{sink="sqlsink"} 2`, // both partitions
		`covmirror_reconcile_failures_total{sink="whole"} 0`,
		`covmirror_reconcile_runs_total 2`,
		`covmirror_reconcile_run_failures_total 0`,
		`covmirror_reconcile_interval_seconds 60`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("the scrape has no %q:\n%s", want, body)
		}
	}
	if got := value(t, m, "covmirror_reconcile_last_success_timestamp_seconds"); got != first {
		t.Fatalf("a failed run moved the success time: %v, then %v", first, got)
	}

	// Replayed and checked again: zero, and a success.
	job.Checkers[sink] = checker
	for _, task := range reconcile.Tasks(mustRun(t, job), "", 0) {
		d.insert(t, task.Destination.Partition, idsOf(task.Range)...)
	}
	if err := job.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(scrape(t, reconcile.MetricsHandler(m, ""), ""), `covmirror_reconcile_claimed_absent_batches{sink="sqlsink"} 0`+"\n") {
		t.Fatal("the replayed sink still shows claimed-absent batches")
	}
}

// value is the one sample of the metric named.
func value(t *testing.T, m *reconcile.Metrics, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func mustRun(t *testing.T, job reconcile.Job) reconcile.Report {
	t.Helper()
	rep, err := reconcile.Run(ctx, job.Tier, job.Checkers, job.Options)
	if err != nil && !errors.Is(err, reconcile.ErrClaimedAbsent) {
		t.Fatal(err)
	}
	return rep
}

// scrape GETs /metrics with the token, and checks that a request without
// it is refused when one is required.
func scrape(t *testing.T, h http.Handler, token string) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if token != "" {
		if code, _ := get("wrong"); code != http.StatusUnauthorized {
			t.Fatalf("a scrape with the wrong token: %d", code)
		}
	}
	code, body := get(token)
	if code != http.StatusOK {
		t.Fatalf("scrape: %d %s", code, body)
	}
	return body
}
