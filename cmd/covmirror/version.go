package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version from the build info is used.
var version = ""

func runVersion(_ context.Context, g *globals, args []string) error {
	fs := subFlags(g, "version", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	v := version
	if v == "" {
		v = "(devel)"
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
			v = info.Main.Version
		}
	}
	fmt.Fprintln(g.stdout, "covmirror", v)
	return nil
}
