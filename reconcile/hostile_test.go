package reconcile_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/reconcile"
)

// holdsAllBut holds everything it is asked about but the batches lost.
type holdsAllBut struct{ lost []uint64 }

func (h holdsAllBut) Held(_ context.Context, _ coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
	s, err := coverage.NewRangeSet(rs...)
	if err != nil {
		return nil, err
	}
	for _, id := range h.lost {
		lost, _ := coverage.NewRangeSet(coverage.Range{Start: id, End: id + 1})
		s = coverage.Gaps(&s, &lost)
	}
	return &s, nil
}

func absentGauge(t *testing.T, m *reconcile.Metrics, sink string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(scrape(t, reconcile.MetricsHandler(m, ""), ""), "\n") {
		if strings.HasPrefix(line, `covmirror_reconcile_claimed_absent_batches{sink="`+sink+`"}`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestMetricsKeepAnAbsenceTheNextSampleDidNotAsk: a scheduled, sampled
// reconcile draws other pieces each run. A run whose sample missed the
// piece an earlier run found absent has not seen it replayed: the gauge
// (and CovmirrorClaimedAbsent) must keep it until a run asks that piece
// again and finds it held.
func TestMetricsKeepAnAbsenceTheNextSampleDidNotAsk(t *testing.T) {
	tier := durableTier(t)
	record(t, tier, "s", "ckpt-1") // partitions 0 and 1, 40 batches each: 8 pieces of 5
	checkers := map[string]reconcile.Checker{"s": holdsAllBut{lost: []uint64{3}}}
	// Seeds whose one-piece sample of partition 0 asks [0,5), and seeds
	// whose sample does not.
	var hits, misses []uint64
	for seed := uint64(1); seed < 200 && (len(hits) == 0 || len(misses) == 0); seed++ {
		o := fast()
		o.Sample, o.Seed = 1, seed
		rep, _ := reconcile.Run(ctx, tier, checkers, o)
		if len(rep.Absent) > 0 {
			hits = append(hits, seed)
		} else {
			misses = append(misses, seed)
		}
	}
	if len(hits) == 0 || len(misses) == 0 {
		t.Fatalf("no seed found: hits %v misses %v", hits, misses)
	}
	m := reconcile.NewMetrics(time.Minute, []string{"s"})
	run := func(seed uint64) {
		o := fast()
		o.Sample, o.Seed = 1, seed
		rep, err := reconcile.Run(ctx, tier, checkers, o)
		m.Observe(rep, err, time.Now())
	}
	run(hits[0])
	if got := absentGauge(t, m, "s"); got != `covmirror_reconcile_claimed_absent_batches{sink="s"} 1` {
		t.Fatalf("after a sample that found batch 3 absent: %q", got)
	}
	run(misses[0])
	if got := absentGauge(t, m, "s"); got != `covmirror_reconcile_claimed_absent_batches{sink="s"} 1` {
		t.Fatalf("a sample that never asked about batch 3 again cleared it: %q", got)
	}
	// A full run that finds it held clears it.
	checkers["s"] = &holdsAll{}
	rep, err := reconcile.Run(ctx, tier, checkers, fast())
	m.Observe(rep, err, time.Now())
	if got := absentGauge(t, m, "s"); got != `covmirror_reconcile_claimed_absent_batches{sink="s"} 0` {
		t.Fatalf("after a full run that found everything held: %q", got)
	}
}

// TestMetricsAddUpAFailedDestinationsLastAbsences: partition 0's absences
// are unknown while its check fails; partition 1's new ones add to them,
// not hide under the larger of the two.
func TestMetricsAddUpAFailedDestinationsLastAbsences(t *testing.T) {
	tier := durableTier(t)
	record(t, tier, "s", "ckpt-1")
	m := reconcile.NewMetrics(time.Minute, []string{"s"})
	observe := func(c reconcile.Checker) {
		rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"s": c}, fast())
		m.Observe(rep, err, time.Now())
	}
	observe(holdsAllBut{lost: []uint64{3}}) // one batch of each partition
	observe(partitionFails{fail: 0, Checker: holdsAllBut{lost: []uint64{4, 5, 6}}})
	// Partition 0: batch 3 as last seen (its check failed); partition 1:
	// batches 4 to 6 (checked, batch 3 found held).
	if got := absentGauge(t, m, "s"); got != `covmirror_reconcile_claimed_absent_batches{sink="s"} 4` {
		t.Fatalf("%q", got)
	}
}

// TestMetricsClaimNoZeroBeforeAnyCheck: before a sink was ever checked its
// claimed-absent count is unknown, not zero: a restarted job must not
// report every sink clean (and resolve CovmirrorClaimedAbsent) before it
// has looked.
func TestMetricsClaimNoZeroBeforeAnyCheck(t *testing.T) {
	m := reconcile.NewMetrics(time.Minute, []string{"s"})
	if n := testutil.CollectAndCount(m, "covmirror_reconcile_claimed_absent_batches"); n != 0 {
		t.Fatalf("%d claimed-absent series before any run", n)
	}
	if n := testutil.CollectAndCount(m, "covmirror_reconcile_failures_total"); n != 1 {
		t.Fatalf("%d failure series before any run, want 1 (rates exist from the start)", n)
	}
	tier := durableTier(t)
	record(t, tier, "s", "ckpt-1")
	rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"s": failing{}}, fast())
	m.Observe(rep, err, time.Now())
	if n := testutil.CollectAndCount(m, "covmirror_reconcile_claimed_absent_batches"); n != 0 {
		t.Fatalf("a sink whose every check failed shows a claimed-absent count")
	}
}

// partitionFails fails every check of one partition.
type partitionFails struct {
	reconcile.Checker
	fail int32
}

func (p partitionFails) Held(ctx context.Context, d coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
	if d.Partition == p.fail {
		return nil, context.DeadlineExceeded
	}
	return p.Checker.Held(ctx, d, rs)
}

// TestMetricsHandlerRefusesAPageOfAnotherSite: without a token the metrics
// listener is loopback, where a browser page of another site can reach it
// by DNS rebinding (a name of the attacker's that resolves to 127.0.0.1)
// or send it a request with its Origin: both are refused, as the
// sidecar's guard refuses them. A scrape by Prometheus (an IP literal or
// localhost, no Origin) passes.
func TestMetricsHandlerRefusesAPageOfAnotherSite(t *testing.T) {
	m := reconcile.NewMetrics(time.Minute, []string{"s"})
	for _, c := range []struct {
		token, host, origin, site, auth string
		want                            int
	}{
		{host: "127.0.0.1:9465", want: http.StatusOK},
		{host: "localhost:9465", want: http.StatusOK},
		{host: "[::1]:9465", want: http.StatusOK},
		{host: "rebind.attacker.example:9465", want: http.StatusMisdirectedRequest},
		{host: "localhost:evil", want: http.StatusMisdirectedRequest},
		{host: "127.0.0.1:9465", origin: "http://attacker.example", want: http.StatusForbidden},
		{host: "127.0.0.1:9465", site: "cross-site", want: http.StatusForbidden},
		{token: "tok", host: "reconcile.monitoring.svc:9465", auth: "Bearer tok", want: http.StatusOK},
		{token: "tok", host: "127.0.0.1:9465", auth: "Bearer nope", want: http.StatusUnauthorized},
		{token: "tok", host: "127.0.0.1:9465", origin: "http://attacker.example", auth: "Bearer tok", want: http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		reconcile.MetricsHandler(m, c.token).ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%+v: %d, want %d", c, w.Code, c.want)
		}
		if c.want != http.StatusOK && strings.Contains(w.Body.String(), "covmirror_reconcile") {
			t.Errorf("%+v: refused, yet the metrics are in the answer", c)
		}
	}
}

// TestHTTPRedirectErrorShowsNoSignature: a service that redirects to a
// presigned URL (an object store's signature in its query) is refused, and
// the error (logged, printed in --json) names where it pointed without the
// query that would let anyone fetch it.
func TestHTTPRedirectErrorShowsNoSignature(t *testing.T) {
	const sig = "X-Amz-Signature=0f1e2d3c4b5a"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://user:pw@bucket.example/held.json?"+sig, http.StatusFound)
	}))
	defer srv.Close()
	c, err := reconcile.NewHTTP(srv.URL+"/{topic}/{partition}/{start}/{end}", reconcile.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Held(ctx, coverage.Destination{Sink: "h", Topic: "t"}, []coverage.Range{{Start: 0, End: 5}})
	if err == nil || strings.Contains(err.Error(), sig) || strings.Contains(err.Error(), "pw@") || !strings.Contains(err.Error(), "bucket.example/held.json") {
		t.Fatalf("%v", err)
	}
}
