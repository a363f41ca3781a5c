package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/tier"
)

func runCheckStore(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "check-store", "[--writers N] [--json]")
	writers := fs.Int("writers", 32, "concurrent conditional writes raced on one version")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *writers < 2 {
		return usageError{Err: errors.New("check-store: --writers must be at least 2")}
	}
	b, err := tier.OpenBlobs(ctx, g.tier)
	if err != nil {
		return err
	}
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	rep, err := object.CheckStore(ctx, b, *writers)
	if *asJSON {
		if jerr := json.NewEncoder(g.stdout).Encode(rep); jerr != nil {
			return jerr
		}
	} else {
		fmt.Fprintln(g.stdout, rep.String())
	}
	if err != nil {
		return fmt.Errorf("check-store %s: %w", b.Name(), err)
	}
	return nil
}
