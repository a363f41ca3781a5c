package main

import (
	"context"

	"github.com/covmirror/covmirror/internal/lite"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version from the build info is used.
var version = ""

// The commands covmirror-lite runs too, from one implementation.

func runRecord(ctx context.Context, g *globals, args []string) error {
	return lite.Record(ctx, g.shell(), g.tier.LocalDir(), args)
}

func runInspect(ctx context.Context, g *globals, args []string) error {
	return lite.Inspect(ctx, g.shell(), g.tier.LocalDir(), args)
}

func runVersion(_ context.Context, g *globals, args []string) error {
	return lite.Version(g.shell(), version, args)
}
