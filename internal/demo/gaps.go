package demo

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/recovery"
)

// showGapsInGo prints the committed gaps the planner computes from
// primary, where Options.ShowGaps is nil (a build without DuckDB).
func showGapsInGo(ctx context.Context, w io.Writer, primary durable.Tier, _ string) error {
	gaps, err := recovery.CommittedGaps(ctx, primary, recovery.GapsFilter{Reference: coverage.RawSink})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "   covmirror gaps (built without cgo, so computed in Go rather than by DuckDB):")
	if len(gaps) == 0 {
		_, err := fmt.Fprintln(w, "   (no rows)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "   sink\ttopic\tpartition\tstart\tend")
	for _, g := range gaps {
		fmt.Fprintf(tw, "   %s\t%s\t%d\t%d\t%d\n", g.Sink, g.Topic, g.Partition, g.Start, g.End)
	}
	return tw.Flush()
}
