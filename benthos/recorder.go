package benthos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/sidecar/client"
)

// recorder is where an output records: the process's pod, or a sidecar.
type recorder interface {
	// record records entries, each only after its sink acknowledged it.
	record(ctx context.Context, entries []coverage.Entry) error
	// recordStates records gap states (refused, unrecoverable) durably:
	// never coverage, so an error only leaves the batches plain gaps.
	recordStates(ctx context.Context, entries []client.StateEntry) error
	// release gives the recorder back; the last release of the pod shuts
	// it down, its final checkpoint carrying every record.
	release() error
}

// shared is the process's one pod, started by the first output that
// connects and shut down when the last one releases it: two pods on one
// state directory would contend for its lock, and two on two directories
// from one stream would split one stream's coverage.
var shared struct {
	mu   sync.Mutex
	opts pod.Options // as given, for comparing the next output's
	refs int
	pod  *pod.Pod
	stop context.CancelFunc
	done chan error
}

// podRecorder is one output's share of the pod.
type podRecorder struct {
	p    *pod.Pod
	by   string // the pod's writer name, the decider of its states
	once sync.Once
}

// checkPod refuses opts while the process's pod runs with other settings,
// so that the mistake is a config error when the stream starts rather
// than a Connect that fails for ever.
func checkPod(opts pod.Options) error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.pod == nil {
		return nil
	}
	return conflict(shared.opts, opts)
}

func conflict(running, opts pod.Options) error {
	if diff := differing(running, opts); len(diff) > 0 {
		return fmt.Errorf("covmirror: this process already runs a pod with other settings (%s differ): every covmirror output of a process records into one pod, so give them all the same pod settings", strings.Join(diff, ", "))
	}
	return nil
}

// acquirePod returns the process's pod, starting it with opts if none
// runs. A pod running with other settings is an error naming the fields
// that differ (never their values: a token or a URL may be secret).
func acquirePod(opts pod.Options, logger *slog.Logger) (recorder, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.pod != nil {
		if err := conflict(shared.opts, opts); err != nil {
			return nil, err
		}
		shared.refs++
		return &podRecorder{p: shared.pod, by: shared.opts.Tier.Writer}, nil
	}
	given := opts
	opts.Logger = logger
	p, err := pod.Start(context.Background(), opts)
	if errors.Is(err, local.ErrLocked) {
		return nil, fmt.Errorf("covmirror: starting the pod on state %s: %w (a running `covmirror serve` on the same state holds its lock: record into it with the sidecar field, or give this stream a state of its own)", opts.Tier.State, err)
	} else if err != nil {
		return nil, fmt.Errorf("covmirror: starting the pod on state %s: %w", opts.Tier.State, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	logger.Info("covmirror pod started", "state", opts.Tier.State, "durable", opts.Tier.Noun(), "record_api", "http://"+p.Addr().String()+"/v1/", "interval", opts.Interval.String())
	shared.opts, shared.refs, shared.pod, shared.stop, shared.done = given, 1, p, stop, done
	return &podRecorder{p: p, by: given.Tier.Writer}, nil
}

func (r *podRecorder) record(ctx context.Context, entries []coverage.Entry) error {
	_, err := r.p.Mirror().RecordBatch(ctx, entries)
	return err
}

func (r *podRecorder) recordStates(ctx context.Context, entries []client.StateEntry) error {
	if len(entries) == 0 {
		return nil
	}
	at := time.Now().UTC()
	events := make([]gapstate.Event, len(entries))
	for i, e := range entries {
		events[i] = gapstate.Event{ID: gapstate.NewID(), Destination: e.Destination, Range: e.Range, State: e.State, Reason: e.Reason, By: r.by, At: at}
	}
	return r.p.RecordStates(ctx, events)
}

func (r *podRecorder) release() error {
	var err error
	r.once.Do(func() {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		if shared.refs--; shared.refs > 0 {
			return
		}
		shared.stop()
		err = <-shared.done // the final checkpoint
		shared.pod, shared.stop, shared.done = nil, nil, nil
		if err != nil {
			err = fmt.Errorf("covmirror: the pod's shutdown: %w (what was not checkpointed stays in the local tier; the next pod on this state checkpoints it)", err)
		}
	})
	return err
}

// settingNames are the pod fields' names in a stream's config, by their
// options' Go path.
var settingNames = map[string]string{
	"Tier.Kind": "durable", "Tier.State": "state", "Tier.CatalogProps": "catalog", "Tier.Namespace": "namespace",
	"Tier.Table": "table", "Tier.Writer": "writer", "Tier.Object.URL": "object.url", "Tier.Object.S3Endpoint": "object.s3_endpoint",
	"Tier.Object.S3Region": "object.s3_region", "Tier.Object.S3ForcePathStyle": "object.s3_force_path_style",
	"Tier.Object.UnsafeStore": "object.unsafe_store", "Tier.Object.Layout": "object.layout", "Tier.Postgres.URL": "postgres.url", "Tier.Postgres.Schema": "postgres.schema", "Tier.Postgres.Layout": "postgres.layout",
	"Interval": "interval", "ReplicateEvery": "replicate_every", "Addr": "addr", "Socket": "socket", "Token": "token",
	"MetricsAddr": "metrics_listen", "MetricsToken": "metrics_token",
	"Sync": "sync", "Sinks": "sinks", "TopicSinks": "topic_sinks",
}

// differing names the pod settings in which a and b differ, the logger
// aside.
func differing(a, b pod.Options) []string {
	a.Logger, b.Logger = nil, nil
	a.Tier.Logger, b.Tier.Logger = nil, nil
	var out []string
	var walk func(prefix string, x, y reflect.Value)
	walk = func(prefix string, x, y reflect.Value) {
		for i := range x.NumField() {
			name := prefix + x.Type().Field(i).Name
			if x.Field(i).Kind() == reflect.Struct {
				walk(name+".", x.Field(i), y.Field(i))
			} else if !reflect.DeepEqual(x.Field(i).Interface(), y.Field(i).Interface()) {
				if key, ok := settingNames[name]; ok {
					name = "pod." + key
				}
				out = append(out, name)
			}
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return out
}
