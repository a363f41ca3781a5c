package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/lazysubstrait"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/internal/settings"
	"github.com/covmirror/covmirror/reconcile"
	"github.com/covmirror/covmirror/sidecar"
	"github.com/covmirror/covmirror/tier"
)

// usageError is a mistake in the command line: exit status 2.
type usageError = lite.UsageError

func exitCode(err error) int {
	var se *tier.SettingsError
	if errors.As(err, &se) || errors.Is(err, sidecar.ErrNotLoopback) || errors.Is(err, sidecar.ErrListenAddr) || errors.Is(err, reconcile.ErrNoChecker) {
		return 2
	}
	return lite.ExitCode(err)
}

// command is one subcommand: its one-line summary and its run function,
// which gets the global settings and the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, g *globals, args []string) error
}

// commands is filled in init: the subcommands refer back to it for their
// usage text.
var commands map[string]command

func init() {
	commands = map[string]command{
		"record":        {lite.Summaries["record"], runRecord},
		"checkpoint":    {"checkpoint the local tier's pending ranges into the coverage table", runCheckpoint},
		"inspect":       {lite.Summaries["inspect"], runInspect},
		"gaps":          {"list committed gaps of every sink against the reference (raw)", runGaps},
		"query":         {"run a canned DuckDB query (coverage, gaps, summary, lag, files, waivers) on the table", runQuery},
		"plan":          {"print the recovery plan: replay tasks from committed coverage", runPlan},
		"compact":       {"rewrite the coverage table's small files, set-equal", runCompact},
		"demo":          {"run the whole system once on embedded defaults and explain each step", runDemo},
		"serve":         {"checkpoint on an interval; serve the record API (/v1/) and /debug/coverage, and /healthz, /readyz and /metrics on a read-only listener", runServe},
		"version":       {lite.Summaries["version"], runVersion},
		"replicate":     {"with --durable object or postgres: copy the primary into its replica, the coverage table, once or --every D", runReplicate},
		"reconcile":     {"check that the sinks hold what committed coverage claims; print what is claimed but absent", runReconcile},
		"refuse":        stateCommand("refuse", gapstate.Refused),
		"unrecoverable": stateCommand("unrecoverable", gapstate.Unrecoverable),
		"reopen":        stateCommand("reopen", gapstate.Reopened),
		"waive":         stateCommand("waive", gapstate.Waived),
		"check-store":   {"prove the object store honours conditional writes (one winner of N same-ETag writes)", runCheckStore},
	}
}

// readsNoTable are the commands that never read an Iceberg table, and so
// start without Substrait's definitions (internal/lazysubstrait): a
// pipeline may run them once per batch (covmirror-lite, the same commands
// in a small binary, starts faster still).
var readsNoTable = map[string]bool{"version": true, "record": true, "inspect": true}

// aliases are commands' former names, still accepted.
var aliases = map[string]string{"mirror": "replicate"}

// globals are the settings every subcommand shares.
type globals struct {
	stdout, stderr io.Writer
	// stdin is what a file argument of "-" reads (--acked-ends -).
	stdin io.Reader
	// set is the settings table's values: the global ones, and a
	// command's own once subFlags registered them.
	set *settings.Set
	// tier is the durable tier's settings, from the global ones.
	tier tier.Settings
	// starts are the streams' declared first batch ids by topic
	// (--stream-start): an extent without a start takes its topic's.
	starts map[string]uint64
	// logger is slog to stderr at --log-level in --log-format: every
	// library the commands open gets it.
	logger *slog.Logger
}

// Run runs the command line args, writing to stdout and stderr. A panic
// anywhere in the command's goroutine is a bug: it becomes an error (exit
// status 1) saying so, with the stack in the debug log, never a Go stack
// trace on the terminal.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	g := &globals{stdout: stdout, stderr: stderr, stdin: os.Stdin, logger: slog.New(slog.DiscardHandler)}
	defer lite.Recover(&err, func() *slog.Logger { return g.logger })
	return run(ctx, g, args)
}

func run(ctx context.Context, g *globals, args []string) error {
	stdout, stderr := g.stdout, g.stderr
	sh := &lite.Shell{Prog: "covmirror", Table: table, Stdout: stdout, Stderr: stderr}
	fs, err := sh.Globals(args, nil, "configuration file: the settings as key = value lines, catalog.* properties as catalog.KEY = VALUE (env COVMIRROR_CONFIG)", usage)
	if err != nil {
		return err
	}
	g.set = sh.Set
	g.tier = tierSettings(g.set)
	if err := errors.Join(g.set.Err(), tier.ParseKind(g.tier.Kind)); err != nil {
		return usageError{Err: err}
	}
	logger, err := settings.NewLogger(stderr, g.set.String("log.level"), g.set.String("log.format"))
	if err != nil {
		return usageError{Err: err}
	}
	g.logger, g.tier.Logger = logger, logger
	g.starts = map[string]uint64{}
	for topic, n := range g.set.Map("start") {
		g.starts[topic], _ = coverage.ParseStart(topic, n) // checked by addStart
	}
	if fs.NArg() == 0 {
		usage(stderr, fs)
		return usageError{Err: errors.New("no command given")}
	}
	name := fs.Arg(0)
	if name == "help" {
		usage(stdout, fs)
		return nil
	}
	cmd, ok := commands[aliases[name]]
	if !ok {
		cmd, ok = commands[name]
	}
	if !ok {
		return usageError{Err: fmt.Errorf("unknown command %q (try covmirror --help)", name)}
	}
	if !readsNoTable[name] {
		if err := lazysubstrait.Load(); err != nil {
			return err
		}
	}
	err = cmd.run(ctx, g, fs.Args()[1:])
	if moved, ok := lite.MoveGlobals(args, fs.NArg(), err); ok {
		return run(ctx, g, moved) // covmirror gaps --state DIR: as covmirror --state DIR gaps
	}
	return err
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: covmirror [global flags] COMMAND [flags] (global flags may follow COMMAND too)")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-13s %s\n", name, commands[name].summary)
	}
	for alias, name := range aliases {
		fmt.Fprintf(w, "  %-13s the former name of %s, still accepted\n", alias, name)
	}
	fmt.Fprintln(w, "\nglobal flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nEach command takes --help. Exit status: 0 success, 1 failure, 2 usage error,\n3 gaps found (gaps, plan and query gaps with --exit-code).")
}

// shell is the command line as the commands shared with covmirror-lite
// see it.
func (g *globals) shell() *lite.Shell {
	return &lite.Shell{Prog: "covmirror", Table: table, Set: g.set, Stdout: g.stdout, Stderr: g.stderr, Logger: g.logger,
		Summary: func(name string) string { return commands[name].summary }}
}

// subFlags is a subcommand's flag set, printing its usage on --help.
func subFlags(g *globals, name, args string) *flag.FlagSet { return g.shell().Flags(name, args) }

// parse parses a subcommand's flags, mapping errors to exit statuses.
func parse(fs *flag.FlagSet, args []string) error { return lite.Parse(fs, args, "covmirror", table) }

// parseFlags is parse for a subcommand that takes arguments besides flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	return lite.ParseFlags(fs, args, "covmirror", table)
}

// partitionFlag is an optional partition, checked when parsed.
type partitionFlag = lite.PartitionFlag
