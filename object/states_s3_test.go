package object

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestConformanceS3Stub runs the durable tiers' suite, the gap states
// among it, over S3 (the in-process stand-in, listing in pages of two):
// each scenario under a prefix of its own, each client its own S3 client.
func TestConformanceS3Stub(t *testing.T) {
	testCredentials(t)
	endpoint := newS3Stub(t, &s3Stub{})
	n := 0
	durabletest.Run(t, durabletest.Harness{Light: true, New: func(t *testing.T) func(t *testing.T) durable.Tier {
		n++
		prefix := fmt.Sprintf("scenario-%d/", n)
		return func(t *testing.T) durable.Tier { return openOn(t, openS3(t, endpoint, "bucket", prefix, nil), 8) }
	}})
}

// TestStatesS3AnswerLost: on S3, a gap-state write that landed but whose
// answer was lost (a 500, a reset or a timeout after the store applied
// it), or that was refused before it reached the store, is retried and
// leaves one object; every event reads back once.
func TestStatesS3AnswerLost(t *testing.T) {
	testCredentials(t)
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 6))
	for _, f := range []httpFault{fault500After, faultResetAfter, faultTimeoutAfter, fault500, fault412, faultResetBefore} {
		t.Run(f.String(), func(t *testing.T) {
			endpoint := newS3Stub(t, &s3Stub{})
			ft := newFaultTransport(once(http.MethodPut, f))
			s := openOn(t, openS3(t, endpoint, "bucket", "tier/", ft), 4)
			events := someEvents(rng, 3)
			m := statesModel{}
			m.add(events)
			if err := s.AppendStates(ctx, events); err != nil {
				t.Fatalf("append through %s: %v", f, err)
			}
			if err := s.AppendStates(ctx, events); err != nil {
				t.Fatalf("the caller's retry: %v", err)
			}
			clean := openS3(t, endpoint, "bucket", "tier/", nil)
			if keys := stateKeys(t, clean); len(keys) != 1 {
				t.Fatalf("%d objects, want 1: %q", len(keys), keys)
			}
			checkStates(t, "after "+f.String(), openOn(t, clean, 1), m, m)
		})
	}
}
