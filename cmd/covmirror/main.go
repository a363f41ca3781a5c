// Command covmirror is the operator's and the scheduled jobs' tool for the
// coverage store: record into the local tier, checkpoint it into the
// coverage table, inspect, list gaps, plan recovery, compact, and a demo of
// the whole system on embedded defaults.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/internal/redact"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !lite.Quiet(err) {
			// The last word on a failure goes through the redaction too: a
			// driver's error from deep in a tier may quote a DSN or a target.
			fmt.Fprintln(os.Stderr, "covmirror:", redact.Error(err))
		}
		os.Exit(exitCode(err))
	}
}
