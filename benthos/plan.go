package benthos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/redact"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/sidecar/client"
	"github.com/covmirror/covmirror/tier"
)

// PlanInputName is the covmirror_plan input's name in a stream's config.
const PlanInputName = "covmirror_plan"

// PlanInputSpec is the covmirror_plan input's config spec.
func PlanInputSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Beta().
		Categories("Utility").
		Summary("Emits the recovery plan's tasks, one message per task, for a replay stream that reads raw and writes through the covmirror output.").
		Description(`
Reads the plan once from committed coverage (the durable tier of `+"`pod`"+`, or a running pod's `+"`POST /v1/plan`"+` with `+"`sidecar`"+`), emits each task and ends. A message's body is the task as `+"`covmirror plan --json`"+` prints it, `+"`{\"sink\",\"topic\",\"partition\",\"start\",\"end\",\"kind\"}`"+`, and its metadata `+"`sink`, `topic`, `partition`, `start`, `end`"+` (the half-open batch range) and `+"`kind`"+`: `+"`replay`"+` (read those batches from raw and write them to the sink) or `+"`verify-reference`"+` (a hole in raw's own coverage: write through raw's covmirror output only the batches raw really holds).

Run the replay stream again until it emits nothing: what it wrote is committed when the stream's covmirror outputs close. A plan longer than its task limit is cut, and logged.`).
		Fields(
			service.NewObjectListField("extents",
				service.NewStringField("topic").Description("The topic."),
				service.NewIntField("partition").Description("The partition."),
				service.NewIntField("start").Default(0).Description("The stream's first batch id in the partition."),
				service.NewIntField("end").Description("The first batch id the source has not acknowledged."),
			).Default([]any{}).Description("The source's acknowledged extents: raw's holes are looked for over all of each (a stream's first or last stretch lost on every sink is found)."),
			service.NewStringField("reference").Default(coverage.RawSink).Description("Raw's sink name."),
			service.NewStringListField("sinks").Default([]any{}).Description("The sinks every topic is written to, besides the sinks with coverage rows of each topic."),
			topicSinksField("the plan replays a sink only in the topics it is named for and those it has rows of."),
			service.NewIntField("max_batches").Default(recovery.DefaultMaxBatches).Description("The most batches one task of the plan covers."),
			service.NewIntField("replay_batch_max").Default(DefaultReplayBatchMax).Description("The most batches one message hands the replay: a task is cut into pieces of at most this many, and fewer once the sink's covmirror output in this process has timed its writes (half its `timeout` at the observed time per message), so that a child writes a piece within the output's timeout."),
			podField(),
			sidecarField(),
		)
}

// DefaultReplayBatchMax is the most batches one message of the
// covmirror_plan input covers by default: a sink writing a message in
// 100 ms still writes a piece within the output's default timeout.
const DefaultReplayBatchMax = 100

// recordStatesTimeout bounds recording a piece's unrecoverable ranges,
// which holds the piece's acknowledgement.
const recordStatesTimeout = 30 * time.Second

// planInput emits the tasks it read at Connect, each cut into pieces.
type planInput struct {
	opts     recovery.PlanOptions
	pieceMax uint64
	dest     destination
	log      logger

	mu    sync.Mutex
	tasks []recovery.Gap
	read  bool

	states stateWriter // where unrecoverable ranges are recorded
	pieces []string    // the tokens of the pieces emitted, ended at Close
}

func newPlanInput(conf *service.ParsedConfig, res *service.Resources) (service.Input, error) {
	in := &planInput{log: logger{res.Logger()}}
	var err error
	if in.dest, err = parseDestination(conf); err != nil {
		return nil, err
	}
	if in.opts.Reference, err = conf.FieldString("reference"); err != nil {
		return nil, err
	}
	if in.opts.Sinks, err = conf.FieldStringList("sinks"); err != nil {
		return nil, err
	}
	if in.opts.TopicSinks, err = parseTopicSinks(conf); err != nil {
		return nil, err
	}
	n, err := conf.FieldInt("max_batches")
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("covmirror_plan: max_batches %d: give a positive number", n)
	}
	in.opts.MaxBatches = uint64(n)
	if n, err = conf.FieldInt("replay_batch_max"); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("covmirror_plan: replay_batch_max %d: give a positive number", n)
	}
	in.pieceMax = uint64(n)
	in.states = stateWriter{dest: in.dest, log: newSlog(in.log.l)}
	if in.opts.Extents, err = parseExtents(conf); err != nil {
		return nil, err
	}
	if err := in.opts.Validate(); err != nil {
		return nil, fmt.Errorf("covmirror_plan: %w", err)
	}
	return service.AutoRetryNacks(in), nil
}

// parseExtents reads the extents field, validated as the CLI's are.
func parseExtents(conf *service.ParsedConfig) ([]coverage.Extent, error) {
	list, err := conf.FieldObjectList("extents")
	if err != nil {
		return nil, err
	}
	es := make([]coverage.Extent, 0, len(list))
	for i, c := range list {
		var e coverage.Extent
		if e.Topic, err = c.FieldString("topic"); err != nil {
			return nil, err
		}
		var p, start, end int
		for _, f := range []struct {
			name string
			v    *int
		}{{"partition", &p}, {"start", &start}, {"end", &end}} {
			if *f.v, err = c.FieldInt(f.name); err != nil {
				return nil, err
			}
			if *f.v < 0 {
				return nil, fmt.Errorf("covmirror_plan: extents[%d].%s %d: batch ids and partitions are not negative", i, f.name, *f.v)
			}
		}
		if p > 1<<31-1 {
			return nil, fmt.Errorf("covmirror_plan: extents[%d].partition %d is past 2147483647", i, p)
		}
		e.Partition, e.Start, e.End = int32(p), uint64(start), uint64(end)
		es = append(es, e)
	}
	es, err = coverage.ValidateExtents(es)
	if err != nil {
		return nil, fmt.Errorf("covmirror_plan: extents: %w", err)
	}
	return es, nil
}

// Connect reads the plan, once.
func (in *planInput) Connect(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.read {
		return nil
	}
	var tasks []recovery.Gap
	var err error
	if in.dest.sidecar != nil {
		tasks, err = sidecarPlan(ctx, *in.dest.sidecar, in.opts, newSlog(in.log.l))
	} else {
		tasks, err = tierPlan(ctx, in.dest.pod.Tier, in.opts)
	}
	if errors.Is(err, recovery.ErrPlanTruncated) {
		in.log.Warnf("covmirror_plan: %v: emitting the first %d tasks; run the replay again for the rest", redact.Error(err), len(tasks))
	} else if err != nil {
		return fmt.Errorf("covmirror_plan: reading the plan: %w", redact.Error(err))
	}
	in.log.Infof("covmirror_plan: %d tasks to replay", len(tasks))
	in.tasks, in.read = tasks, true
	return nil
}

// tierPlan plans from the durable tier the pod settings name.
func tierPlan(ctx context.Context, s tier.Settings, opts recovery.PlanOptions) ([]recovery.Gap, error) {
	t, closer, err := tier.Open(ctx, s, false)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	tasks, err := recovery.Plan(ctx, t, opts)
	return recovery.GapsOf(tasks, recovery.GapsFilter{}), err
}

// Read emits the next piece of the first task: its range cut to the
// sink's piece size (pieceSize). The piece is acknowledged once every
// message the replay made of it is: then the batches of its range that
// reached no covmirror output are what raw no longer holds.
func (in *planInput) Read(ctx context.Context) (*service.Message, service.AckFunc, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.tasks) == 0 {
		return nil, nil, service.ErrEndOfInput
	}
	g := in.tasks[0]
	if size := pieceSize(in.dest.where(), g.Sink, in.pieceMax); g.End-g.Start > size {
		in.tasks[0].Start = g.Start + size
		g.End = g.Start + size
	} else {
		in.tasks = in.tasks[1:]
	}
	body, err := json.Marshal(g)
	if err != nil {
		return nil, nil, err
	}
	d := coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}
	m := service.NewMessage(body)
	for k, v := range map[string]string{"sink": g.Sink, "topic": g.Topic, "partition": strconv.Itoa(int(g.Partition)),
		"start": strconv.FormatUint(g.Start, 10), "end": strconv.FormatUint(g.End, 10), "kind": string(g.Kind)} {
		m.MetaSetMut(k, v)
	}
	// A hole in raw's own coverage that its verification finds empty stays
	// a hole, for a person to look into: it is no sink's loss to record,
	// and no state holds raw's holes out of the plan.
	token := ""
	if g.Kind != recovery.KindVerifyReference {
		token = startPiece(d, coverage.Range{Start: g.Start, End: g.End})
		in.pieces = append(in.pieces, token)
		m.MetaSetMut(metaReplay, token)
	}
	return m, func(ctx context.Context, err error) error {
		if err != nil {
			return nil // retried: the piece goes on collecting
		}
		in.ended(ctx, endPiece(token))
		return nil
	}, nil
}

// ended records what an acknowledged piece lacks as unrecoverable for
// its sink: raw no longer holds those batches, so no replay can close
// them. A piece with a failed read judges nothing.
func (in *planInput) ended(ctx context.Context, p *piece) {
	if p == nil {
		return
	}
	if p.failed != nil {
		in.log.Warnf("covmirror_plan: sink %q, topic %q, partition %d, batches %d-%d: not judged for what raw lacks: %v", p.d.Sink, p.d.Topic, p.d.Partition, p.r.Start, p.r.End-1, p.failed)
		return
	}
	missing := p.missing()
	if len(missing) == 0 {
		return
	}
	if !outputsRecording(in.dest) {
		in.log.Debugf("covmirror_plan: no covmirror output records where this input reads the plan: what raw lacks of sink %q's batches %d-%d is not judged", p.d.Sink, p.r.Start, p.r.End-1)
		return
	}
	entries := make([]client.StateEntry, len(missing))
	for i, r := range missing {
		entries[i] = client.StateEntry{Destination: p.d, Range: r, State: gapstate.Unrecoverable,
			Reason: fmt.Sprintf("a replay to sink %q read batches %d-%d from raw and raw did not hold these", p.d.Sink, p.r.Start, p.r.End-1)}
	}
	rctx, cancel := context.WithTimeout(ctx, recordStatesTimeout)
	defer cancel()
	if err := in.states.record(rctx, entries); err != nil {
		in.log.Errorf("covmirror_plan: sink %q, topic %q, partition %d: raw holds none of %v; recording them unrecoverable failed, they stay gaps in the plan: %v", p.d.Sink, p.d.Topic, p.d.Partition, missing, err)
		return
	}
	in.log.Warnf("covmirror_plan: sink %q, topic %q, partition %d: raw holds none of %v: recorded unrecoverable, out of the replay plan (restore raw and reopen them, or waive them)", p.d.Sink, p.d.Topic, p.d.Partition, missing)
}

// Close forgets the pieces never acknowledged: they judge nothing.
func (in *planInput) Close(context.Context) error {
	in.mu.Lock()
	for _, token := range in.pieces {
		endPiece(token)
	}
	in.pieces = nil
	in.mu.Unlock()
	return in.states.close()
}
