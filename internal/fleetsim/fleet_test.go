package fleetsim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
)

// quick is a small fleet: 8 pods (2 real) on 20 partitions each, 3 rounds.
func quick(seed uint64) Options {
	return Options{Seed: seed, Pods: 8, Topics: 4, PartitionsPerTopic: 40, Rounds: 3, SinkFailure: 0.05}
}

// objectOnS3 opens the object tier over one simulated bucket, a handle per
// pod, and samples the bucket.
func objectOnS3(t *testing.T, o *Options, s3 S3Options) *S3 {
	t.Helper()
	s := newS3(t, s3)
	o.OpenTier = func(ctx context.Context, _ int) (durable.Tier, error) {
		return object.Open(ctx, object.Options{Blobs: s})
	}
	o.Stats = S3Counters(s)
	return s
}

// A small fleet on the object tier over the simulated S3 lands exactly
// what its pods recorded, races and all, and the figures add up.
func TestQuickFleetObject(t *testing.T) {
	seed := testseed.SeedOr(t, 0)
	synctest.Test(t, func(t *testing.T) {
		o := quick(seed)
		objectOnS3(t, &o, S3Options{Seed: seed})
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d:\n%s", seed, res)
		if res.Checkpoints+res.Failed < o.Pods || res.Destinations == 0 || res.Batches == 0 {
			t.Fatalf("nothing ran: %+v", res)
		}
		// Every pod writes the same 5 sink objects: 8 pods racing on them
		// lose some races, and each lost race is a 412 the bucket counted.
		if res.Tier.LostRaces == 0 || res.Tier.Retained != 5 || res.Tier.Requests == 0 || res.Tier.Window <= 0 {
			t.Fatalf("tier counters: %+v", res.Tier)
		}
		if res.P99 < DefaultMinLatency || res.Elapsed < time.Duration(o.Rounds-1)*time.Second {
			t.Fatalf("latency p99 %v, elapsed %v: faster than the bucket allows", res.P99, res.Elapsed)
		}
	})
}

// The same small fleet on the simulated table, with a compactor job that
// counts its runs.
func TestQuickFleetCatalog(t *testing.T) {
	seed := testseed.SeedOr(t, 0)
	synctest.Test(t, func(t *testing.T) {
		o := quick(seed)
		c, err := NewCatalog(CatalogOptions{Inner: NewMemTier(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		o.OpenTier = func(context.Context, int) (durable.Tier, error) { return c, nil }
		o.Stats = CatalogCounters(c)
		runs := 0
		o.Compactor = func(context.Context) error { runs++; return nil }
		o.CompactEvery = time.Second
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d:\n%s", seed, res)
		if runs < 2 || res.Compactions != runs-1 {
			t.Fatalf("compactor ran %d times, %d counted in the rounds: want every second and once after", runs, res.Compactions)
		}
		if int(c.Commits()) < res.Checkpoints || res.Tier.LostRaces == 0 {
			t.Fatalf("%d commits, %d conflicts for %d checkpoints", c.Commits(), res.Tier.LostRaces, res.Checkpoints)
		}
	})
}

// dropping is a tier that loses one destination's ranges while reporting
// success: the final check must catch it.
type dropping struct {
	durable.Tier
	drop coverage.Destination
}

func (d dropping) Append(ctx context.Context, c durable.Checkpoint) error {
	var kept []coverage.DestinationRanges
	for _, dr := range c.Ranges {
		if dr.Destination != d.drop {
			kept = append(kept, dr)
		}
	}
	c.Ranges = kept
	return d.Tier.Append(ctx, c)
}

// extra is a tier that adds a range no pod recorded.
type extra struct{ durable.Tier }

func (e extra) Append(ctx context.Context, c durable.Checkpoint) error {
	c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: "raw", Topic: "nobody", Partition: 1},
		Ranges: []coverage.Range{{Start: 1, End: 2}}})
	return e.Tier.Append(ctx, c)
}

func TestCheckCatchesLossAndLead(t *testing.T) {
	for name, wrap := range map[string]func(durable.Tier) durable.Tier{
		"loss": func(t durable.Tier) durable.Tier {
			return dropping{t, coverage.Destination{Sink: "sink-2", Topic: "topic-001", Partition: 3}}
		},
		"lead": func(t durable.Tier) durable.Tier { return extra{t} },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := quick(1)
				o.RealPods = -1
				mem := NewMemTier()
				o.OpenTier = func(_ context.Context, pod int) (durable.Tier, error) {
					if pod < 0 {
						return mem, nil
					}
					return wrap(mem), nil
				}
				_, err := Run(context.Background(), o)
				if !errors.Is(err, ErrCoverageMismatch) {
					t.Fatalf("Run: %v, want ErrCoverageMismatch", err)
				}
				t.Log(err)
			})
		})
	}
}
