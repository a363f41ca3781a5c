package iceberg

import (
	"context"
	"testing"
	"time"
)

// A table that lost a commit attempt recently loads fresh metadata before
// an append's first attempt; when that load fails (the catalog blinks),
// the append goes on from the metadata in hand, as it does uncontended,
// and its commit loop retries through the catalog's outage, instead of
// failing the whole checkpoint before a single attempt.
func TestContendedAppendSurvivesAFailedFirstLoad(t *testing.T) {
	ctx := context.Background()
	tbl, cat := openFaulty(t)
	if err := tbl.Append(ctx, oneRange("pod/1", 1)); err != nil {
		t.Fatal(err)
	}
	tbl.lastConflict.Store(time.Now().UnixNano()) // as after a lost attempt
	cat.loadsFail.Store(1)
	if err := tbl.Append(ctx, oneRange("pod/2", 3)); err != nil {
		t.Fatalf("contended append whose fresh first load failed: %v", err)
	}
	assertSnapshots(t, tbl, 2)
}
