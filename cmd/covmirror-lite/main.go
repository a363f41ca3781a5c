// Command covmirror-lite is covmirror's per-batch commands, record, inspect
// and version, in a binary that links only the local tier: it starts in a
// few milliseconds of CPU and about a third of covmirror's memory, for a
// pipeline that runs a command once per batch. The commands, their flags,
// their output and their exit statuses are covmirror's (one
// implementation, internal/lite). It reads covmirror's configuration file
// and COVMIRROR_* variables, takes from them the settings it uses (state,
// log.level, log.format, token-file) and leaves covmirror's other keys to
// covmirror; any other key is a mistake, as in covmirror.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/internal/settings"
)

const prog = "covmirror-lite"

var summaries = lite.Summaries

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, lite.ErrHelp) {
			fmt.Fprintln(os.Stderr, prog+":", err)
		}
		os.Exit(lite.ExitCode(err))
	}
}

// run runs the command line args. A panic is a bug: it becomes an error
// saying so (exit status 1), with the stack in the debug log.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	sh := &lite.Shell{Prog: prog, Table: lite.Table(), Stdout: stdout, Stderr: stderr, Logger: slog.New(slog.DiscardHandler),
		Summary: func(name string) string { return summaries[name] }}
	defer lite.Recover(&err, func() *slog.Logger { return sh.Logger })
	fs, err := sh.Globals(args, lite.CovmirrorKeys, "configuration file, covmirror's: the settings as key = value lines (env COVMIRROR_CONFIG)", usage)
	if err != nil {
		return err
	}
	if err := sh.Set.Err(); err != nil {
		return lite.UsageError{Err: err}
	}
	if sh.Logger, err = settings.NewLogger(stderr, sh.Set.String("log.level"), sh.Set.String("log.format")); err != nil {
		return lite.UsageError{Err: err}
	}
	if fs.NArg() == 0 {
		usage(stderr, fs)
		return lite.UsageError{Err: errors.New("no command given")}
	}
	err = command(ctx, sh, fs)
	if moved, ok := lite.MoveGlobals(args, fs.NArg(), err); ok {
		return run(ctx, moved, stdout, stderr) // record --state DIR: as --state DIR record
	}
	return err
}

// command runs the command fs's arguments name.
func command(ctx context.Context, sh *lite.Shell, fs *flag.FlagSet) error {
	dir, rest := lite.LocalDir(sh.Set.String("state")), fs.Args()[1:]
	switch name := fs.Arg(0); name {
	case "help":
		usage(sh.Stdout, fs)
		return nil
	case "record":
		return lite.Record(ctx, sh, dir, rest)
	case "inspect":
		return lite.Inspect(ctx, sh, dir, rest)
	case "version":
		return lite.Version(sh, rest)
	default:
		return lite.UsageError{Err: fmt.Errorf("unknown command %q: %s runs record, inspect and version; covmirror runs every command (try %[2]s --help)", name, prog)}
	}
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s [global flags] COMMAND [flags]\n\ncommands (covmirror's, in a small binary):\n", prog)
	names := make([]string, 0, len(summaries))
	for name := range summaries {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, summaries[name])
	}
	fmt.Fprintln(w, "\nglobal flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nEach command takes --help. Exit status: 0 success, 1 failure, 2 usage error.")
}
