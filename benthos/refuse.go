package benthos

import (
	"context"
	"errors"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/sidecar/client"
)

// refusals finds the messages of a failed write (sub, written as
// batch[at[j]]) whose failure the permanent field names, and returns
// them as refusals. A plain error of a batch of several messages names
// none of them (http_client stops at the first message its sink refused):
// when it is permanent each message not acknowledged is written alone
// again, so that only the messages the sink itself refuses are refused;
// what it then acknowledges has errs[j] cleared and is recorded as any
// acknowledged message. A timed-out write is never permanent.
func (o *output) refusals(ctx context.Context, sub service.MessageBatch, at []int, keys []batchKey, failed, errs []error, werr error) []client.StateEntry {
	if o.perm.none() {
		return nil
	}
	var berr *service.BatchError
	if len(sub) > 1 && !errors.As(werr, &berr) && o.perm.rule(werr) != "" {
		for j := range sub {
			if errs[j] == nil || ctx.Err() != nil {
				continue
			}
			one, _ := writeThrough(ctx, o.child, sub[j:j+1])
			errs[j] = one[0]
		}
	}
	var ids []int
	var reasons []string
	var done []failureKey
	where := o.dest.where()
	for j, i := range at {
		k := failureKey{where: where, d: keys[i].d, id: keys[i].id}
		if failed[i] != nil {
			continue // no batch to refuse: its ids did not parse
		}
		if errs[j] == nil {
			done = append(done, k)
			continue
		}
		rule := ""
		if ctx.Err() == nil {
			rule = o.perm.rule(errs[j])
		}
		if o.perm.attempts > 0 {
			if n := countFailure(k); rule == "" && n >= o.perm.attempts {
				rule = fmt.Sprintf("failed %d times", n)
			}
		}
		if rule == "" {
			continue
		}
		ids, reasons, done = append(ids, i), append(reasons, refusal(keys[i].d.Sink, rule, errs[j])), append(done, k)
	}
	if o.perm.attempts > 0 {
		forgetFailures(done)
	}
	return refusedStates(keys, ids, reasons)
}

// recordRefused records the refusals; on an error they stay plain gaps,
// replayed as before.
func (o *output) recordRefused(ctx context.Context, rec recorder, batch service.MessageBatch, refused []client.StateEntry) {
	if len(refused) == 0 {
		return
	}
	if err := rec.recordStates(ctx, refused); err != nil {
		o.log.Errorf("covmirror: sink %s: recording %d refused ranges: %v; they stay gaps, replayed", o.sinkName(batch), len(refused), err)
		return
	}
	for _, e := range refused {
		o.refused.Incr(int64(e.Range.End-e.Range.Start), e.Destination.Sink)
		o.log.Warnf("covmirror: sink %q refused batches %d-%d of topic %q partition %d permanently: recorded as refused, out of the replay plan until reopened: %s",
			e.Destination.Sink, e.Range.Start, e.Range.End-1, e.Destination.Topic, e.Destination.Partition, e.Reason)
	}
}
