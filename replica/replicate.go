package replica

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	ice "github.com/apache/iceberg-go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// Options configures Replicate. Zero values are documented
// defaults.
type Options struct {
	// Writer names the replicating process in the table's snapshot
	// summaries. Required.
	Writer string
	// Logger receives a line per sink replaced. Zero value: discard.
	Logger *slog.Logger
}

// EnsureDefaults fills in zero values.
func (o *Options) EnsureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports unusable options.
func (o *Options) Validate() error {
	if o.Writer == "" {
		return errors.New("replica: replicate: Options.Writer is empty: name the replicating process")
	}
	return nil
}

// Result counts what Replicate did.
type Result struct {
	Sinks     int `json:"sinks"`     // sinks in the primary
	Replaced  int `json:"replaced"`  // sinks whose rows in the table were replaced
	Unchanged int `json:"unchanged"` // sinks the table already mirrored exactly
	Raced     int `json:"raced"`     // sinks skipped: a compaction replaced their files meanwhile
	Extra     int `json:"extra"`     // sinks the table has and the primary has not, left as they are
	Corrupt   int `json:"corrupt"`   // sinks left as they are: their files hold a row that is not theirs or not valid
	States    int `json:"states"`    // gap states the table lacked and was given (ReplicateStates)
}

// Replicate makes the coverage table a mirror of the primary: per sink, the
// table's rows are replaced by the primary's merged coverage, read after
// the table's files were listed, so that any engine can query the table.
// The table may lag the primary, never lead it: it only ever receives
// what the primary had committed. A sink already mirrored exactly is not
// rewritten. Sinks the table holds and the primary does not (rows written
// before the primary was chosen) are left and counted as Extra. A sink
// whose files hold a row that is not a valid row of it (another engine's)
// is left as it is and counted as Corrupt, and the others are mirrored; the
// error then wraps coverage.ErrCorrupt for each such sink.
func Replicate(ctx context.Context, primary durable.Tier, table *iceberg.Table, opts Options) (Result, error) {
	var res Result
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return res, err
	}
	logger := opts.Logger
	tbl, err := table.Load(ctx)
	if err != nil {
		return res, fmt.Errorf("replica: replicate into %s: %w", table.Name(), err)
	}
	tasksOf, err := iceberg.DataFilesBySink(ctx, tbl)
	if err != nil {
		return res, fmt.Errorf("replica: replicate into %s: %w", table.Name(), err)
	}
	filesOf := map[string][]ice.DataFile{}
	for sink, tasks := range tasksOf {
		for _, task := range tasks {
			filesOf[sink] = append(filesOf[sink], task.File)
		}
	}
	// Read after the files were listed: the primary only grows, so what is
	// written is at most what it holds.
	all, err := primary.Coverage(ctx, durable.Filter{})
	if err != nil {
		return res, fmt.Errorf("replica: replicate from %s: %w", primary.Name(), err)
	}
	bySink := map[string]map[coverage.Destination]*coverage.RangeSet{}
	for d, set := range all {
		if bySink[d.Sink] == nil {
			bySink[d.Sink] = map[coverage.Destination]*coverage.RangeSet{}
		}
		bySink[d.Sink][d] = set
	}
	for sink := range filesOf {
		if bySink[sink] == nil {
			res.Extra++
			logger.Warn("the table has a sink the primary has not; left as it is", "table", table.Name(), "sink", sink)
		}
	}
	var corrupt []error
	for _, sink := range slices.Sorted(maps.Keys(bySink)) {
		res.Sinks++
		want := bySink[sink]
		have, haveTimes, err := iceberg.ReadFilesCoverage(ctx, tbl, sink, tasksOf[sink])
		if errors.Is(err, coverage.ErrCorrupt) {
			// Its files cannot be replaced without losing that row; the
			// other sinks need not wait for it to be removed.
			res.Corrupt++
			logger.Error("a sink's rows in the table are left as they are: its files hold a row that is not a valid row of it", "table", table.Name(), "sink", sink, "err", err)
			corrupt = append(corrupt, fmt.Errorf("replica: replicate: reading sink %s of %s: %w", sink, table.Name(), err))
			continue
		}
		if err != nil {
			return res, fmt.Errorf("replica: replicate: reading sink %s of %s: %w", sink, table.Name(), err)
		}
		if sameCoverage(have, want) {
			res.Unchanged++
			continue
		}
		c := durable.Checkpoint{Name: "mirror/" + randomName(), Writer: opts.Writer}
		for _, d := range slices.SortedFunc(maps.Keys(want), coverage.Destination.Compare) {
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: want[d].Ranges()})
		}
		if len(filesOf[sink]) == 0 {
			err = table.Append(ctx, c)
		} else {
			_, err = table.Rewrite(ctx, tbl, filesOf[sink], c, keptTimes(c, have, haveTimes))
		}
		if errors.Is(err, iceberg.ErrInputsGone) {
			res.Raced++
			logger.Info("a compaction replaced the sink's files meanwhile; it is replicated on the next run", "sink", sink)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("replica: replicate sink %s into %s: %w", sink, table.Name(), err)
		}
		res.Replaced++
		logger.Info("sink replicated", "table", table.Name(), "sink", sink, "destinations", len(want))
		if tbl, err = table.Load(ctx); err != nil {
			return res, fmt.Errorf("replica: replicate into %s: %w", table.Name(), err)
		}
	}
	if res.States, err = ReplicateStates(ctx, primary, table, opts); err != nil {
		return res, errors.Join(append(corrupt, err)...)
	}
	return res, errors.Join(corrupt...)
}

// keptTimes gives each range of c that the table already holds, exactly,
// the recorded_at it has there; the others (grown, or new) are recorded at
// the rewrite's time. Rewriting a sink whose one destination grew then
// leaves the others' lag and gap ages as they were.
func keptTimes(c durable.Checkpoint, have map[coverage.Destination]*coverage.RangeSet, haveTimes iceberg.RecordedAt) iceberg.RecordedAt {
	times := iceberg.RecordedAt{}
	for _, dr := range c.Ranges {
		set := have[dr.Destination]
		if set == nil {
			continue
		}
		held := make(map[coverage.Range]time.Time, set.Len())
		i := 0
		for r := range set.All() {
			held[r] = haveTimes[dr.Destination][i]
			i++
		}
		own := make([]time.Time, len(dr.Ranges))
		for j, r := range dr.Ranges {
			own[j] = held[r]
		}
		times[dr.Destination] = own
	}
	return times
}

func sameCoverage(a, b map[coverage.Destination]*coverage.RangeSet) bool {
	if len(a) != len(b) {
		return false
	}
	for d, set := range a {
		if o := b[d]; o == nil || !o.Equal(set) {
			return false
		}
	}
	return true
}

func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ReplicateEvery replicates primary into table now and then once per every
// until ctx ends: the replica job of `covmirror replicate --every` and
// `serve --replicate-every`. A failed run is logged and the table lags until the
// next one; it never stops the job. It returns nil when ctx ends, and an
// error, replicating nothing, for an interval that is not positive or
// options Replicate refuses.
func ReplicateEvery(ctx context.Context, primary durable.Tier, table *iceberg.Table, every time.Duration, opts Options) error {
	if every <= 0 {
		return fmt.Errorf("replica: replicating on a schedule needs a positive interval, not %s", every)
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		res, err := Replicate(ctx, primary, table, opts)
		if err != nil && ctx.Err() == nil {
			opts.Logger.Warn("mirroring the primary into the coverage table failed; the table lags until the next run", "primary", primary.Name(), "table", table.Name(), "err", err)
		} else if err == nil {
			opts.Logger.Debug("replicated", "sinks", res.Sinks, "replaced", res.Replaced)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
