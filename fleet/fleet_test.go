package fleet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/fleet"
	"github.com/covmirror/covmirror/lease"
	"github.com/covmirror/covmirror/object"
)

const ttl = 30 * time.Second

// pod is one process's Role over a lease in a shared directory, with its
// jobs counting their runs into a shared ledger.
type pod struct {
	role   *fleet.Role
	cancel context.CancelFunc
	done   chan struct{}
}

type ledger struct {
	mu      sync.Mutex
	running map[string]int // job name -> runs in progress, across pods
	runs    map[string]int // pod -> runs
	overlap bool
}

func (l *ledger) job(podName, job string) func(context.Context) error {
	return func(ctx context.Context) error {
		l.mu.Lock()
		l.running[job]++
		if l.running[job] > 1 {
			l.overlap = true
		}
		l.runs[podName]++
		l.mu.Unlock()
		// The work takes a while, and stops when the lease is lost.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		l.mu.Lock()
		l.running[job]--
		l.mu.Unlock()
		if job == "failing" {
			return errors.New("boom")
		}
		return nil
	}
}

func start(t *testing.T, blobs object.Blobs, name string, l *ledger) *pod {
	t.Helper()
	le, err := lease.NewObject(blobs, lease.Options{Role: "fleet", Holder: name, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	r := fleet.New(fleet.Options{Lease: le, Holder: name})
	for _, j := range []string{"gaps", "failing"} {
		if err := r.Add(j, time.Minute, l.job(name, j)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pod{role: r, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(p.done); _ = r.Run(ctx) }()
	return p
}

// TestOneRoleRunsTheJobs: of three Roles on one lease, one runs the jobs
// (its leader gauge 1, the others' 0) and no job ever runs in two at once;
// stopping the leader hands the jobs to another, and failures are counted
// per job.
func TestOneRoleRunsTheJobs(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		blobs, err := object.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer blobs.Close()
		l := &ledger{running: map[string]int{}, runs: map[string]int{}}
		names := []string{"a", "b", "c"}
		pods := map[string]*pod{}
		for _, n := range names {
			pods[n] = start(t, blobs, n, l)
		}
		leaders := func() []string {
			var out []string
			for _, n := range names {
				if p := pods[n]; p != nil && p.role.Leading() {
					out = append(out, n)
				}
			}
			return out
		}
		for round := range 2 {
			time.Sleep(5 * time.Minute)
			synctest.Wait()
			ls := leaders()
			if len(ls) != 1 {
				t.Fatalf("round %d: leaders %v, want exactly one", round, ls)
			}
			p := pods[ls[0]]
			// The leader counts its runs and the failing job's failures.
			if n := metric(t, p.role, "covmirror_fleet_job_failures_total", "failing"); n == 0 {
				t.Errorf("round %d: the leader counted no failure of the failing job", round)
			}
			if n := metric(t, p.role, "covmirror_fleet_leader", ""); n != 1 {
				t.Errorf("round %d: the leader's gauge is %v, want 1", round, n)
			}
			for _, o := range pods {
				if o != p && metric(t, o.role, "covmirror_fleet_leader", "") != 0 {
					t.Errorf("round %d: a pod that does not lead exports covmirror_fleet_leader 1", round)
				}
			}
			p.cancel()
			<-p.done
			delete(pods, ls[0])
			l.mu.Lock()
			t.Logf("round %d: %s led; runs %v", round, ls[0], l.runs)
			l.mu.Unlock()
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if ls := leaders(); len(ls) != 1 {
			t.Fatalf("the last pod: leaders %v, want it", ls)
		}
		l.mu.Lock()
		if l.overlap {
			t.Error("a job ran in two pods at once")
		}
		for _, n := range names {
			if l.runs[n] == 0 {
				t.Errorf("pod %s never ran the jobs; each led in turn", n)
			}
		}
		l.mu.Unlock()
		for _, p := range pods {
			p.cancel()
			<-p.done
		}
	})
}

// metric is the value of name (with job label job, if given) as r
// exports it.
func metric(t *testing.T, r *fleet.Role, name, job string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if job != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != job) {
				continue
			}
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("%s{job=%q} is not exported", name, job)
	return 0
}
