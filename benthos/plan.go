package benthos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/recovery"
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
			service.NewIntField("max_batches").Default(recovery.DefaultMaxBatches).Description("The most batches one task covers."),
			podField(),
			sidecarField(),
		)
}

// planInput emits the tasks it read at Connect.
type planInput struct {
	opts recovery.PlanOptions
	dest destination
	log  *service.Logger

	mu    sync.Mutex
	tasks []recovery.Gap
	read  bool
}

func newPlanInput(conf *service.ParsedConfig, res *service.Resources) (service.Input, error) {
	in := &planInput{log: res.Logger()}
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
	n, err := conf.FieldInt("max_batches")
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("covmirror_plan: max_batches %d: give a positive number", n)
	}
	in.opts.MaxBatches = uint64(n)
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
		tasks, err = sidecarPlan(ctx, *in.dest.sidecar, in.opts, newSlog(in.log))
	} else {
		tasks, err = tierPlan(ctx, in.dest.pod.Tier, in.opts)
	}
	if errors.Is(err, recovery.ErrPlanTruncated) {
		in.log.Warnf("covmirror_plan: %v: emitting the first %d tasks; run the replay again for the rest", err, len(tasks))
	} else if err != nil {
		return fmt.Errorf("covmirror_plan: reading the plan: %w", err)
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

func (in *planInput) Read(ctx context.Context) (*service.Message, service.AckFunc, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.tasks) == 0 {
		return nil, nil, service.ErrEndOfInput
	}
	g := in.tasks[0]
	in.tasks = in.tasks[1:]
	body, err := json.Marshal(g)
	if err != nil {
		return nil, nil, err
	}
	m := service.NewMessage(body)
	for k, v := range map[string]string{"sink": g.Sink, "topic": g.Topic, "partition": strconv.Itoa(int(g.Partition)),
		"start": strconv.FormatUint(g.Start, 10), "end": strconv.FormatUint(g.End, 10), "kind": string(g.Kind)} {
		m.MetaSetMut(k, v)
	}
	return m, func(context.Context, error) error { return nil }, nil
}

func (in *planInput) Close(context.Context) error { return nil }
