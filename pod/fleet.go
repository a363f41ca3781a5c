package pod

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/fleet"
	"github.com/covmirror/covmirror/gapmetrics"
	"github.com/covmirror/covmirror/lease"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/replica"
	"github.com/covmirror/covmirror/tier"
)

// The values of Options.Fleet: which pods do the fleet work (the gap
// metrics' whole-table refresh, the replica loop).
const (
	// FleetEvery: every pod does it, as a small deployment wants.
	FleetEvery = "every"
	// FleetElected: the pod holding the deployment's lease does it (a
	// lease object beside the sink objects, or an advisory lock in the
	// PostgreSQL database); the others wait to take over.
	FleetElected = "elected"
	// FleetNever: the pod does none; another process does (a pod run with
	// FleetElected that gets no record traffic).
	FleetNever = "never"
)

// FleetRole is the lease's role name: one holder per deployment.
const FleetRole = "fleet"

// ParseFleet checks a value of Options.Fleet.
func ParseFleet(v string) error {
	switch v {
	case FleetEvery, FleetElected, FleetNever:
		return nil
	}
	return fmt.Errorf("fleet %q: use every (every pod refreshes the gap metrics and runs the replica loop), elected (the pod holding the deployment's lease does) or never (another process does)", v)
}

// validateFleet refuses a mode the durable tier cannot give a lease for.
func (o *Options) validateFleet() error {
	if err := ParseFleet(o.Fleet); err != nil {
		return fmt.Errorf("pod: %w", err)
	}
	if o.FleetTTL < 0 {
		return fmt.Errorf("pod: the fleet lease's TTL must be positive, not %s", o.FleetTTL)
	}
	if o.Fleet == FleetElected && o.Tier.TableIsPrimary() {
		return &tier.SettingsError{Err: fmt.Errorf("pod: fleet = elected needs a lease location, and the iceberg durable tier has none: use durable = object or postgres, " +
			"or run the fleet work in one pod (fleet = every) and fleet = never on the others")}
	}
	return nil
}

// gapSlot exports the gap metrics of the current holding: a fresh
// gapmetrics.Metrics from each acquisition, none while the pod does not
// lead, so that only the leader exports gap series.
type gapSlot struct {
	opts gapmetrics.Options
	mu   sync.Mutex
	cur  *gapmetrics.Metrics
}

func (s *gapSlot) change(leading bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = nil
	if leading {
		s.cur, _ = gapmetrics.New(s.opts) // fails only without a table
	}
}

func (s *gapSlot) get() *gapmetrics.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *gapSlot) refresh(ctx context.Context) error {
	g := s.get()
	if g == nil {
		return nil
	}
	err := g.Refresh(ctx)
	if err != nil && ctx.Err() == nil {
		// The line the alert CovmirrorGapRefreshFailing points to, as
		// gapmetrics.Metrics.Run logs it.
		s.opts.Logger.Warn("gap metrics refresh failed; the last good values stay exported",
			"table", s.opts.Table.Name(), "err", err, "retry_in", s.opts.Interval.String())
	}
	return err
}

// Describe sends nothing: the series come and go with the lease (an
// unchecked collector).
func (s *gapSlot) Describe(chan<- *prometheus.Desc) {}

func (s *gapSlot) Collect(ch chan<- prometheus.Metric) {
	if g := s.get(); g != nil {
		g.Collect(ch)
	}
}

// startFleet builds the fleet role with its jobs and registers its
// metrics in reg; nil with FleetNever. Adding a job is one Add line.
func (p *Pod) startFleet(ctx context.Context, reg prometheus.Registerer, gaps gapmetrics.Options) (*fleet.Role, error) {
	o := p.opts
	if o.Fleet == FleetNever {
		return nil, nil
	}
	var l lease.Lease
	if o.Fleet == FleetElected {
		var err error
		if l, err = p.openLease(ctx); err != nil {
			return nil, err
		}
	}
	slot := &gapSlot{opts: gaps}
	role := fleet.New(fleet.Options{Lease: l, Holder: o.Tier.Writer, OnChange: slot.change, Logger: o.Logger})
	if err := role.Add("gap-metrics", gaps.Interval, slot.refresh); err != nil {
		return nil, err
	}
	if !o.Tier.TableIsPrimary() && o.ReplicateEvery > 0 {
		ropts := replica.Options{Writer: o.Tier.Writer, Logger: o.Logger}
		if err := ropts.Validate(); err != nil {
			o.Logger.Error("the replica job did not start; the coverage table is not kept up to date", "err", err)
		} else if err := role.Add("replica", o.ReplicateEvery, func(ctx context.Context) error {
			_, err := replica.Replicate(ctx, p.tier, p.table, ropts)
			return err
		}); err != nil {
			return nil, err
		}
	}
	// The deltas layout's fold, once per checkpoint interval: the pods'
	// checkpoints wait in deltas until it merges them into the bases. On
	// PostgreSQL the deltas are rows of its blobs table.
	if ot, ok := p.tier.(*object.Tier); ok && ot.Layout() == object.LayoutDeltas {
		if err := addFold(role, o, "object.layout", ot.Fold); err != nil {
			return nil, err
		}
	}
	if pt, ok := p.tier.(*postgres.Tier); ok && pt.Layout() == postgres.LayoutDeltas {
		if err := addFold(role, o, "postgres.layout", pt.FoldDeltas); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(role); err != nil {
		return nil, fmt.Errorf("registering the fleet role's metrics: %w", err)
	}
	if err := reg.Register(slot); err != nil {
		return nil, fmt.Errorf("registering the gap metrics: %w", err)
	}
	return role, nil
}

// openLease opens the lease on the durable tier's own store.
func (p *Pod) openLease(ctx context.Context) (lease.Lease, error) {
	o := p.opts
	lo := lease.Options{Role: FleetRole, Holder: o.Tier.Writer, TTL: o.FleetTTL, Logger: o.Logger}
	if lo.Holder == "" {
		lo.Holder = "pod"
	}
	if o.Tier.Kind == tier.Postgres {
		po, err := o.Tier.PostgresOptions()
		if err != nil {
			return nil, err
		}
		return lease.NewPostgres(po.URL, po.Schema, lo)
	}
	blobs, err := tier.OpenBlobs(ctx, o.Tier)
	if err != nil {
		return nil, fmt.Errorf("opening the fleet lease's store: %w", err)
	}
	l, err := lease.NewObject(blobs, lo)
	if err != nil {
		if c, ok := blobs.(io.Closer); ok {
			_ = c.Close()
		}
		return nil, err
	}
	if c, ok := blobs.(io.Closer); ok {
		p.leaseBlobs = c
	}
	return l, nil
}

// FleetLeading reports whether this pod is doing the fleet work now: it
// holds the lease (FleetElected), or always (FleetEvery); never with
// FleetNever.
func (p *Pod) FleetLeading() bool { return p.fleet != nil && p.fleet.Leading() }

// addFold adds the deltas layout's fold to the role. A fold that left
// deltas for later (unreadable, or a base write failed) is a failed run,
// so that the job's failure metric and log show what only a later fold, or
// an operator, can finish.
func addFold(role *fleet.Role, o Options, setting string, fold func(context.Context) (object.FoldResult, error)) error {
	if o.Fleet == FleetEvery {
		// Safe (folds merge by union), but each pod then reads every
		// pod's deltas and rewrites the bases they touch each interval.
		o.Logger.Warn(setting + " = deltas with fleet = every: every pod folds the whole deployment's checkpoints each interval; set fleet = elected so that one pod does")
	}
	return role.Add("fold", o.Interval, func(ctx context.Context) error {
		res, err := fold(ctx)
		o.Logger.Debug("fold", "layout", setting, "deltas", res.Deltas, "sink-objects", res.SinkObjects, "bases", res.Bases, "left", res.Left, "err", err)
		if err == nil && res.Left > 0 {
			err = fmt.Errorf("fold: %d deltas or sink objects left for a later fold (unreadable, or a base write failed; the errors are logged above)", res.Left)
		}
		return err
	})
}
