package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/covmirror/covmirror/local"
)

func runInspect(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "inspect", "[--json] [--url URL [--token-file PATH]]")
	asJSON := fs.Bool("json", false, "print the diagnostics as JSON")
	url := fs.String("url", "", "a running pod's diagnostics handler; without it the local tier under --state is opened (which fails while a pod holds it)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var diag local.Diagnostics
	if *url != "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
		if err != nil {
			return usageError{fmt.Errorf("inspect: --url: %w", err)}
		}
		if err := authorize(req, g.set.String("token-file")); err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return fmt.Errorf("inspect: %s answered %s: %s", *url, resp.Status, body)
		}
		if err := json.NewDecoder(resp.Body).Decode(&diag); err != nil {
			return fmt.Errorf("inspect: decoding %s: %w", *url, err)
		}
	} else {
		store, err := g.openLocal()
		if err != nil {
			return err
		}
		diag, err = store.Diagnostics(ctx)
		if closeErr := store.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(diag)
	}
	fmt.Fprintf(g.stdout, "local tier %s: %d destinations, %d batches pending in %d ranges, last checkpoint %d\n",
		diag.Dir, len(diag.Destinations), diag.PendingBatches, diag.PendingRanges, diag.LastCheckpointID)
	for _, d := range diag.Destinations {
		fmt.Fprintf(g.stdout, "  %s: covered %v, gaps vs %s %v, pending %v\n", d.Destination, d.Covered, diag.Reference, d.Gaps, d.Pending)
	}
	return nil
}
