package pod_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/tier"
)

// scrape is a pod's /metrics (on its metrics listener) as series -> value.
func scrape(t *testing.T, p *pod.Pod) map[string]float64 {
	t.Helper()
	if p.MetricsAddr() == nil {
		t.Fatal("the pod has no metrics listener: start it with Options.MetricsAddr")
	}
	resp, err := http.Get("http://" + p.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

type runningPod struct {
	p      *pod.Pod
	cancel context.CancelFunc
	done   chan error
}

// TestElectedPodsOneDoesTheFleetWork: three pods in elected mode on one
// object tier: exactly one runs the replica and gap-metrics jobs and
// exports gap series; shutting it down hands them to another.
func TestElectedPodsOneDoesTheFleetWork(t *testing.T) {
	shared := t.TempDir()
	props, err := iceberg.EmbeddedProps(filepath.Join(shared, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.ToSlash(filepath.Join(shared, "objects"))
	pods := map[string]*runningPod{}
	for _, name := range []string{"pod-a", "pod-b", "pod-c"} {
		ts := tier.Settings{Kind: tier.Object, State: t.TempDir(), CatalogProps: props, Writer: name, Object: tier.ObjectSettings{URL: url}}
		ctx, cancel := context.WithCancel(context.Background())
		p, err := pod.Start(ctx, pod.Options{Tier: ts, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Interval: time.Hour, Fleet: pod.FleetElected,
			FleetTTL: 900 * time.Millisecond, ReplicateEvery: time.Hour})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		rp := &runningPod{p: p, cancel: cancel, done: make(chan error, 1)}
		go func() { rp.done <- p.Run(ctx) }()
		pods[name] = rp
		defer func() { cancel(); <-rp.done }()
	}
	// waitLeader polls until one pod leads and has run the jobs, and
	// checks no other pod runs them or exports gap series meanwhile.
	waitLeader := func(skip string) string {
		t.Helper()
		for range 600 {
			var leaders []string
			for name, rp := range pods {
				if name != skip && rp.p.FleetLeading() {
					leaders = append(leaders, name)
				}
			}
			if len(leaders) > 1 {
				t.Fatalf("pods %v all do the fleet work", leaders)
			}
			if len(leaders) == 1 {
				m := scrape(t, pods[leaders[0]].p)
				if m[`covmirror_fleet_job_runs_total{job="replica"}`] > 0 && m["covmirror_gap_refreshes_total"] > 0 {
					for name, rp := range pods {
						if name == skip || name == leaders[0] {
							continue
						}
						o := scrape(t, rp.p)
						if o[`covmirror_fleet_job_runs_total{job="replica"}`] != 0 || o["covmirror_fleet_leader"] != 0 {
							t.Errorf("%s, not leading, ran the replica job or exports covmirror_fleet_leader 1", name)
						}
						if _, ok := o["covmirror_gap_refreshes_total"]; ok {
							t.Errorf("%s, not leading, exports the gap metrics", name)
						}
					}
					return leaders[0]
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no pod took up the fleet work")
		return ""
	}
	first := waitLeader("")
	t.Logf("%s leads", first)
	pods[first].cancel()
	if err := <-pods[first].done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: Run: %v", first, err)
	}
	pods[first].done <- nil // for the deferred wait
	second := waitLeader(first)
	t.Logf("after %s stopped, %s leads", first, second)
	// The lease object names the holder.
	blobs, err := object.OpenDir(filepath.Join(shared, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	data, _, err := blobs.Get(context.Background(), "leases/"+pod.FleetRole)
	if err != nil || !strings.Contains(string(data), `"holder":"`+second+`"`) {
		t.Errorf("the lease object reads %s (%v), want holder %s", data, err, second)
	}
}

// TestElectedNeedsALeaseLocation: elected mode on the iceberg tier is
// refused with a clear error, as is an unknown mode.
func TestElectedNeedsALeaseLocation(t *testing.T) {
	ts := tier.Settings{State: t.TempDir(), Writer: "test"}
	_, err := pod.Start(context.Background(), pod.Options{Tier: ts, Addr: "127.0.0.1:0", Fleet: pod.FleetElected})
	var se *tier.SettingsError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "lease location") {
		t.Errorf("elected on iceberg: %v, want a settings error naming the lease location", err)
	}
	if _, err := pod.Start(context.Background(), pod.Options{Tier: ts, Addr: "127.0.0.1:0", Fleet: "sometimes"}); err == nil {
		t.Error("an unknown fleet mode was accepted")
	}
}

// TestNeverExportsNoGaps: a pod with FleetNever does no fleet work and
// exports no gap series; FleetEvery (the default) does.
func TestNeverExportsNoGaps(t *testing.T) {
	for _, mode := range []string{pod.FleetNever, ""} {
		ts := tier.Settings{State: t.TempDir(), Writer: "test"}
		p, err := pod.Start(context.Background(), pod.Options{Tier: ts, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Fleet: mode})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]float64
		for range 200 {
			if m = scrape(t, p); mode == pod.FleetNever || m["covmirror_gap_refreshes_total"] > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		_, gaps := m["covmirror_gap_refreshes_total"]
		if mode == pod.FleetNever && (gaps || p.FleetLeading()) {
			t.Errorf("fleet = never: the pod leads (%v) or exports gap metrics (%v)", p.FleetLeading(), gaps)
		}
		if mode == "" && (!gaps || !p.FleetLeading() || m["covmirror_fleet_leader"] != 1) {
			t.Errorf("fleet = every: the pod does not lead or exports no gap metrics: %v", m)
		}
		if err := p.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestElectedPodFoldsDeltas: two pods write the deltas layout; the one
// holding the lease folds, so their checkpoints leave deltas/ for the
// bases and the durable tier still holds every range recorded.
func TestElectedPodFoldsDeltas(t *testing.T) {
	shared := t.TempDir()
	props, err := iceberg.EmbeddedProps(filepath.Join(shared, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(shared, "objects")
	url := "file://" + filepath.ToSlash(dir)
	var pods []*pod.Pod
	for _, name := range []string{"pod-a", "pod-b"} {
		ts := tier.Settings{Kind: tier.Object, State: t.TempDir(), CatalogProps: props, Writer: name,
			Object: tier.ObjectSettings{URL: url, Layout: string(object.LayoutDeltas)}}
		ctx, cancel := context.WithCancel(context.Background())
		p, err := pod.Start(ctx, pod.Options{Tier: ts, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Interval: 50 * time.Millisecond, Fleet: pod.FleetElected,
			FleetTTL: 900 * time.Millisecond, ReplicateEvery: time.Hour})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		defer func() { cancel(); <-done }()
		pods = append(pods, p)
	}
	want := map[coverage.Destination]coverage.Range{}
	for i, p := range pods {
		for part := range int32(3) {
			d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: part + int32(i)*100}
			r := coverage.Range{Start: 10, End: 20}
			if err := p.Mirror().Record(context.Background(), d, r); err != nil {
				t.Fatal(err)
			}
			want[d] = r
		}
	}
	blobs, err := object.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	reader, err := object.Open(context.Background(), object.Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		deltas, err := blobs.List(context.Background(), "deltas/")
		if err != nil {
			t.Fatal(err)
		}
		bases, err := blobs.List(context.Background(), "bases/")
		if err != nil {
			t.Fatal(err)
		}
		got, err := reader.Coverage(context.Background(), durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		all := true
		for d, r := range want {
			all = all && got[d] != nil && got[d].ContainsRange(r)
		}
		if all && len(deltas) == 0 && len(bases) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d deltas left, %d bases, every range in the tier: %v", len(deltas), len(bases), all)
		}
	}
}

// TestFoldLeavingADeltaIsAFailedRun: a delta the fold cannot read stays
// where it is (it is a checkpoint's coverage), and each fold that leaves
// it counts as a failed run of the fleet's fold job, so that the failure
// metric, not only a log line, shows it.
func TestFoldLeavingADeltaIsAFailedRun(t *testing.T) {
	shared := t.TempDir()
	props, err := iceberg.EmbeddedProps(filepath.Join(shared, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(shared, "objects")
	blobs, err := object.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	w, err := object.Open(context.Background(), object.Options{Blobs: blobs, Layout: object.LayoutDeltas})
	if err != nil {
		t.Fatal(err)
	}
	d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 1}
	if err := w.Append(context.Background(), durable.Checkpoint{Name: "c1", Writer: "old-pod",
		Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 1, End: 5}}}}}); err != nil {
		t.Fatal(err)
	}
	keys, err := blobs.List(context.Background(), "deltas/")
	if err != nil || len(keys) != 1 {
		t.Fatalf("deltas after one append: %v, %v", keys, err)
	}
	if _, err := blobs.Put(context.Background(), keys[0], []byte("not a delta"), ""); err == nil {
		t.Fatal("a delta was overwritten by a create")
	}
	data, v, err := blobs.Get(context.Background(), keys[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if _, err := blobs.Put(context.Background(), keys[0], data, v); err != nil {
		t.Fatal(err)
	}
	ts := tier.Settings{Kind: tier.Object, State: t.TempDir(), CatalogProps: props, Writer: "pod-a",
		Object: tier.ObjectSettings{URL: "file://" + filepath.ToSlash(dir), Layout: string(object.LayoutDeltas)}}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := pod.Start(ctx, pod.Options{Tier: ts, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Interval: 50 * time.Millisecond,
		Fleet: pod.FleetElected, FleetTTL: 900 * time.Millisecond, ReplicateEvery: time.Hour})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if scrape(t, p)[`covmirror_fleet_job_failures_total{job="fold"}`] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("after a minute of folds that left an unreadable delta, the fold job counted no failure")
		}
	}
	if left, err := blobs.List(context.Background(), "deltas/"); err != nil || len(left) != 1 {
		t.Errorf("the unreadable delta: %v, %v; want it left where it is", left, err)
	}
}
