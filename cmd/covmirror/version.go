package main

import (
	"context"

	"github.com/covmirror/covmirror/internal/lite"
)

// The commands covmirror-lite runs too, from one implementation.

func runRecord(ctx context.Context, g *globals, args []string) error {
	return lite.Record(ctx, g.shell(), g.tier.LocalDir(), args)
}

func runInspect(ctx context.Context, g *globals, args []string) error {
	return lite.Inspect(ctx, g.shell(), g.tier.LocalDir(), args)
}

func runVersion(_ context.Context, g *globals, args []string) error {
	return lite.Version(g.shell(), args)
}
