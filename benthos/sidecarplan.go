package benthos

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/sidecar/client"
)

// newClient is a client of the running pod s names. An address may be
// given as serve prints it, with the record API's /v1/.
func newClient(s sidecarSettings, logger *slog.Logger) (*client.Client, error) {
	addr := s.address
	if a, ok := strings.CutSuffix(strings.TrimSuffix(addr, "/"), "/v1"); ok {
		addr = a
	}
	c, err := client.New(client.Options{Address: addr, Socket: s.socket, Token: s.token, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("covmirror: sidecar: %w", err)
	}
	return c, nil
}

// sidecarPlan asks a running pod for the plan (POST /v1/plan with the
// extents). A plan the pod cut to its task limit comes with
// recovery.ErrPlanTruncated.
func sidecarPlan(ctx context.Context, s sidecarSettings, opts recovery.PlanOptions, logger *slog.Logger) ([]recovery.Gap, error) {
	c, err := newClient(s, logger)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	p, err := c.Plan(ctx, client.PlanQuery{GapsQuery: client.GapsQuery{Reference: opts.Reference, Sinks: opts.Sinks, TopicSinks: opts.TopicSinks, Extents: opts.Extents},
		MaxBatches: opts.MaxBatches})
	if err != nil {
		return nil, err
	}
	out := make([]recovery.Gap, len(p.Tasks))
	for i, g := range p.Tasks {
		out[i] = recovery.Gap{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition, Start: g.Start, End: g.End, Kind: recovery.TaskKind(g.Kind)}
	}
	if p.Truncated {
		return out, fmt.Errorf("the pod's %w", recovery.ErrPlanTruncated)
	}
	return out, nil
}

// sidecarRecorder records into a running pod through its record API.
type sidecarRecorder struct{ c *client.Client }

// connectSidecar is a recorder of the running pod s names, once the pod
// answered (with the token): a pod that is down or refuses the token
// fails Connect, which Benthos retries, rather than every write.
func connectSidecar(ctx context.Context, s sidecarSettings, logger *slog.Logger) (recorder, error) {
	c, err := newClient(s, logger)
	if err != nil {
		return nil, err
	}
	if _, err := c.Extents(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("covmirror: sidecar: the pod does not answer: %w", err)
	}
	return &sidecarRecorder{c: c}, nil
}

// record is all or nothing at the pod (client.Client.Record): an error
// means maybe recorded, which the caller treats as not recorded (a lag).
func (r *sidecarRecorder) record(ctx context.Context, entries []coverage.Entry) error {
	return r.c.Record(ctx, entries)
}

// recordStates is all or nothing at the pod, which names the decider
// (its writer) and the time.
func (r *sidecarRecorder) recordStates(ctx context.Context, entries []client.StateEntry) error {
	_, err := r.c.RecordStates(ctx, entries)
	return err
}

func (r *sidecarRecorder) release() error { return r.c.Close() }
