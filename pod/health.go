package pod

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/sidecar"
)

// readyProbeName is the checkpoint name readiness asks the durable tier
// whether it landed: no checkpoint is named so (names are local's), so the
// answer is false, and what matters is that the tier gave one.
const readyProbeName = "covmirror-readiness-probe"

// maxPingTimeout bounds one readiness ping of the durable tier, below the
// example probes' timeoutSeconds (5).
const maxPingTimeout = 4 * time.Second

// readiness answers /readyz: the pod is ready when it is not shutting
// down, its local tier is open and healthy, the durable tier was reached
// within the last checkpoint interval, and the last checkpoint succeeded
// within Options.ReadyMaxCheckpointAge.
type readiness struct {
	store    *local.Store
	mirror   *mirror.Mirror
	tier     durable.Tier
	writer   string
	interval time.Duration
	maxAge   time.Duration
	started  time.Time
	now      func() time.Time
	draining atomic.Bool

	mu       sync.Mutex // one ping at a time
	pingedAt time.Time  // when the last ping ended
	pingErr  error      // its error
	reached  time.Time  // when a ping last succeeded
}

// live is /healthz: the process serves, unless the local tier failed for
// good (only a restart helps then: health.go in package local).
func (r *readiness) live() error {
	if err := r.store.Err(); err != nil && !errors.Is(err, coverage.ErrClosed) {
		return err // closed is a pod stopping, not failing
	}
	return nil
}

// reasons are /readyz's failing reasons, each named first.
func (r *readiness) reasons(ctx context.Context) []string {
	var out []string
	if r.draining.Load() {
		out = append(out, "shutting-down: the pod is stopping; it takes no new writes and runs its final checkpoint")
	}
	if err := r.store.Err(); err != nil {
		out = append(out, "local-tier: "+err.Error())
	}
	st := r.mirror.Stats()
	if err := r.durableReached(ctx, st.LastReached); err != nil {
		out = append(out, fmt.Sprintf("durable-tier: %s was not reached within the last %s (the checkpoint interval): %v", r.tier.Name(), r.interval, err))
	}
	now := r.now()
	last, since := st.LastSuccess, "since it succeeded"
	if last.IsZero() {
		last, since = r.started, "and none has succeeded since the pod started"
	}
	if age := now.Sub(last); age > r.maxAge {
		why := fmt.Sprintf("checkpoint-age: the last checkpoint is %s old (%s), more than the bound of %s", age.Round(time.Second), since, r.maxAge)
		if st.LastError != "" {
			why += fmt.Sprintf("; %d failed in a row, the last with: %s", st.ConsecutiveFailures, st.LastError)
		}
		out = append(out, why)
	}
	return out
}

// durableReached is nil when a checkpoint committed to the durable tier
// within the last interval; otherwise it asks the tier itself (Landed, a
// read), at most once per interval while the answers succeed, and reports
// the failure. A failed ping is reused for a second, so that probes piling
// up behind a stuck tier do not each wait out their own ping.
func (r *readiness) durableReached(ctx context.Context, lastCommit time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(lastCommit) <= r.interval || now.Sub(r.reached) <= r.interval {
		return nil
	}
	if r.pingErr != nil && now.Sub(r.pingedAt) < time.Second {
		return r.pingErr
	}
	pctx, cancel := context.WithTimeout(ctx, min(r.interval, maxPingTimeout))
	defer cancel()
	_, err := r.tier.Landed(pctx, r.writer, readyProbeName)
	r.pingedAt, r.pingErr = r.now(), err
	if err == nil {
		r.reached = r.pingedAt
	}
	return err
}

// startMetricsListener opens the read-only listener on Options.MetricsAddr:
// /healthz, /readyz and /metrics, with its own token or none.
func (p *Pod) startMetricsListener(store *local.Store) error {
	o := p.opts
	if o.MetricsAddr == "" {
		return nil
	}
	p.ready = &readiness{store: store, mirror: p.mirror, tier: p.tier, writer: o.Tier.Writer, interval: o.Interval,
		maxAge: o.ReadyMaxCheckpointAge, started: time.Now(), now: time.Now}
	srv, err := sidecar.NewReadOnly(sidecar.ReadOnlyOptions{Metrics: p.metrics, Live: p.ready.live, Ready: p.ready.reasons,
		Token: o.MetricsToken, AllowedHosts: o.AllowedHosts, Logger: o.Logger})
	if err != nil {
		return err
	}
	addr, err := sidecar.ListenAddr(o.MetricsAddr)
	if err != nil {
		return fmt.Errorf("pod: --metrics-listen: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("pod: the metrics listener on %s: %w: give --metrics-listen another address, or an empty one for none", o.MetricsAddr, err)
	}
	if tcp, _ := ln.Addr().(*net.TCPAddr); tcp != nil && !tcp.IP.IsLoopback() {
		o.Logger.Info("the metrics listener is reachable from other hosts; it is read-only",
			"addr", ln.Addr().String(), "metrics_token", o.MetricsToken != "")
	}
	p.metricsSrv, p.metricsLn = srv, ln
	return nil
}

// MetricsAddr is the metrics listener's address; nil without one.
func (p *Pod) MetricsAddr() net.Addr {
	if p.metricsLn == nil {
		return nil
	}
	return p.metricsLn.Addr()
}

// closeMetricsListener closes a metrics listener opened before a later
// listener failed to open.
func (p *Pod) closeMetricsListener() {
	if p.metricsLn != nil {
		_ = p.metricsLn.Close()
		p.metricsSrv, p.metricsLn = nil, nil
	}
}
