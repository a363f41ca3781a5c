package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/lease"
)

// Job is one piece of fleet work: Run is called when the lease is
// acquired and then every Every while it is held, with a context that ends
// when the lease is lost. A failed run is logged and counted; the next one
// runs on schedule.
type Job struct {
	// Name names the job in logs and in the metrics' job label.
	Name string
	// Every is the time between the starts of two runs; positive.
	Every time.Duration
	// Run does the work once.
	Run func(ctx context.Context) error
}

// Options configure a Role.
type Options struct {
	// Lease is the deployment's lease; nil: the Role runs its jobs all the
	// time, as every pod of a small deployment does.
	Lease lease.Lease
	// Holder names this process in the logs (the pod's writer name).
	Holder string
	// OnChange, if set, is called with true after the lease is acquired
	// and before any job runs, and with false after every job returned on
	// its loss: the caller resets what a new holding starts afresh.
	OnChange func(leading bool)
	// Logger gets acquisitions, losses and failed runs. Zero: discard.
	Logger *slog.Logger
}

// Role runs its jobs while holding the lease. Add jobs, then Run it.
type Role struct {
	opts    Options
	mu      sync.Mutex
	jobs    []Job
	running bool
	leading atomic.Bool

	leader   prometheus.Gauge
	acquired prometheus.Counter
	runs     *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// New returns a Role without jobs.
func New(opts Options) *Role {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Role{opts: opts,
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "covmirror_fleet_leader",
			Help: "1 while this process holds the fleet lease and runs the fleet jobs (the gap metrics' refresh, the replica loop), else 0; always 1 without a lease (--fleet every)."}),
		acquired: prometheus.NewCounter(prometheus.CounterOpts{Name: "covmirror_fleet_acquisitions_total",
			Help: "Times this process acquired the fleet lease."}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "covmirror_fleet_job_runs_total",
			Help: "Runs of a fleet job by this process, failed or not."}, []string{"job"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "covmirror_fleet_job_failures_total",
			Help: "Failed runs of a fleet job by this process; the next one runs on schedule."}, []string{"job"}),
	}
}

// Add adds a job: one line per job. It fails for a job without a name, a
// run function or a positive interval, for a name already added, and
// after Run started.
func (r *Role) Add(name string, every time.Duration, run func(ctx context.Context) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.running:
		return fmt.Errorf("fleet: job %s added after the role started: add every job before Run", name)
	case name == "" || run == nil:
		return errors.New("fleet: a job needs a name and a run function")
	case every <= 0:
		return fmt.Errorf("fleet: job %s: the interval must be positive, not %s", name, every)
	}
	for _, j := range r.jobs {
		if j.Name == name {
			return fmt.Errorf("fleet: job %s added twice", name)
		}
	}
	r.jobs = append(r.jobs, Job{Name: name, Every: every, Run: run})
	r.runs.WithLabelValues(name)
	r.failures.WithLabelValues(name)
	return nil
}

// Leading reports whether the Role is running its jobs: it holds the
// lease, or has none.
func (r *Role) Leading() bool { return r.leading.Load() }

// Jobs are the jobs added, in order.
func (r *Role) Jobs() []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Job(nil), r.jobs...)
}

// Describe implements prometheus.Collector.
func (r *Role) Describe(ch chan<- *prometheus.Desc) {
	r.leader.Describe(ch)
	r.acquired.Describe(ch)
	r.runs.Describe(ch)
	r.failures.Describe(ch)
}

// Collect implements prometheus.Collector.
func (r *Role) Collect(ch chan<- prometheus.Metric) {
	r.leader.Collect(ch)
	r.acquired.Collect(ch)
	r.runs.Collect(ch)
	r.failures.Collect(ch)
}

// Run contends for the lease and runs the jobs while it is held, until
// ctx ends; then it closes the lease, releasing it, and returns nil. It
// runs once.
func (r *Role) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return errors.New("fleet: Run called twice")
	}
	r.running = true
	jobs := append([]Job(nil), r.jobs...)
	r.mu.Unlock()
	log := r.opts.Logger.With("holder", r.opts.Holder)
	if r.opts.Lease == nil {
		r.hold(ctx, jobs, log)
		return nil
	}
	defer func() {
		if err := r.opts.Lease.Close(); err != nil {
			log.Warn("fleet: releasing the lease failed; another process takes it over after its TTL", "lease", r.opts.Lease.Name(), "err", err)
		}
	}()
	for {
		held, err := r.opts.Lease.Acquire(ctx)
		if err != nil {
			return nil // ctx ended, or the lease closed
		}
		r.acquired.Inc()
		log.Info("fleet: lease acquired; running the fleet jobs", "lease", r.opts.Lease.Name())
		r.hold(held, jobs, log)
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("fleet: lease lost; the fleet jobs stopped", "lease", r.opts.Lease.Name(), "cause", context.Cause(held))
	}
}

// hold runs every job until held ends and they all returned.
func (r *Role) hold(held context.Context, jobs []Job, log *slog.Logger) {
	if r.opts.OnChange != nil {
		r.opts.OnChange(true)
	}
	r.leading.Store(true)
	r.leader.Set(1)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { r.loop(held, j, log) })
	}
	wg.Wait()
	r.leader.Set(0)
	r.leading.Store(false)
	if r.opts.OnChange != nil {
		r.opts.OnChange(false)
	}
}

// loop runs j now and every j.Every until ctx ends.
func (r *Role) loop(ctx context.Context, j Job, log *slog.Logger) {
	t := time.NewTicker(j.Every)
	defer t.Stop()
	for {
		err := j.Run(ctx)
		if ctx.Err() != nil {
			return // stopped by the loss: not a failure of the job
		}
		r.runs.WithLabelValues(j.Name).Inc()
		if err != nil {
			r.failures.WithLabelValues(j.Name).Inc()
			log.Warn("fleet: a job failed; the next run is on schedule", "job", j.Name, "err", err, "next_in", j.Every.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
