// Command covmirror is the operator's tool for the coverage store. Its
// subcommands arrive with the durable tier; for now it reports its version.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "covmirror:", err)
		os.Exit(exitCode(err))
	}
}

// Run runs the command line args, writing to stdout and stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	_ = ctx
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprintln(stdout, "usage: covmirror version")
		return nil
	}
	switch args[0] {
	case "version":
		fmt.Fprintln(stdout, "covmirror", version)
		return nil
	}
	fmt.Fprintf(stderr, "usage: covmirror version\n")
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

const version = "0.1.0-dev"

type usageError struct{ error }

func exitCode(err error) int {
	if _, ok := err.(usageError); ok {
		return 2
	}
	return 1
}
