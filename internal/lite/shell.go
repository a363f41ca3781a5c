package lite

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/covmirror/covmirror/internal/settings"
	"github.com/covmirror/covmirror/internal/version"
)

// UsageError is a mistake in the command line: exit status 2.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

// ErrHelp is returned after --help printed the usage: exit status 0.
var ErrHelp = errors.New("help requested")

// ErrVersionShown is returned after --version printed the version: exit
// status 0 and nothing more printed, as for ErrHelp, which it matches.
var ErrVersionShown = fmt.Errorf("version shown: %w", ErrHelp)

// ExitCode is the exit status of a command's error as far as this
// package knows: 0 for none or --help, 2 for a usage error, ExitGaps for
// ErrGapsFound, else 1.
func ExitCode(err error) int {
	var u UsageError
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	case errors.Is(err, ErrGapsFound):
		return ExitGaps
	}
	return 1
}

// Shell is one binary's command line as the commands see it.
type Shell struct {
	// Prog is the binary's name in usage lines and hints.
	Prog string
	// Table is the binary's settings table; Set its values (nil before
	// the global flags were parsed).
	Table []settings.Setting
	Set   *settings.Set
	// Summary is a command's one-line summary for its usage text.
	Summary        func(command string) string
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
}

// Flags is a command's flag set with its settings registered, printing
// its usage on --help.
func (sh *Shell) Flags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(sh.Stderr)
	if sh.Set != nil {
		sh.Set.Register(fs, name)
	}
	fs.Usage = func() {
		fmt.Fprintf(sh.Stderr, "usage: %s %s %s\n\n%s\n\nflags:\n", sh.Prog, name, args, sh.Summary(name))
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses a command's flags, refusing arguments besides them.
func (sh *Shell) Parse(fs *flag.FlagSet, args []string) error {
	return Parse(fs, args, sh.Prog, sh.Table)
}

// Parse parses the flags of prog's command fs, refusing arguments besides
// them.
func Parse(fs *flag.FlagSet, args []string, prog string, table []settings.Setting) error {
	if err := ParseFlags(fs, args, prog, table); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError{fmt.Errorf("%s: unexpected arguments %q", fs.Name(), fs.Args())}
	}
	return nil
}

// ParseFlags is Parse for a command that takes arguments besides flags,
// and for the global flags (the flag set named prog). Parsing is silent,
// --help prints the usage, and a mistake is returned once, with a pointer
// to --help.
func ParseFlags(fs *flag.FlagSet, args []string, prog string, table []settings.Setting) error {
	if fs.Name() != prog {
		if found := globalFlags(fs, args, table); len(found) > 0 {
			return &GlobalsAfterCommand{Flags: found}
		}
	}
	err := settings.Parse(fs, args, func(name string) bool { return settings.Repeatable(table, name) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return ErrHelp
	case fs.Name() == prog: // the global flags
		return UsageError{fmt.Errorf("%w (%s --help lists the flags)", err, prog)}
	}
	return UsageError{fmt.Errorf("%s: %w (%s %[1]s --help lists the flags)", fs.Name(), err, prog)}
}

// Globals reads the configuration file (--config among the global flags,
// else COVMIRROR_CONFIG) against sh.Table, skipping the keys of others
// (settings.LoadShared), sets sh.Set, and parses args' global flags: the
// returned flag set's arguments are the command and its own. Both binaries
// resolve their settings here, so that a flag, variable or line of the
// file means the same to each, the state directory above all.
func (sh *Shell) Globals(args, others []string, configUsage string, usage func(io.Writer, *flag.FlagSet)) (*flag.FlagSet, error) {
	file, err := settings.LoadShared(settings.ConfigPath(args, sh.Table, "COVMIRROR_CONFIG"), sh.Table, others)
	var readErr *settings.ReadError
	if errors.As(err, &readErr) {
		return nil, err
	} else if err != nil {
		return nil, UsageError{Err: err}
	}
	sh.Set = settings.New(sh.Table, file)
	fs := flag.NewFlagSet(sh.Prog, flag.ContinueOnError)
	fs.SetOutput(sh.Stderr)
	fs.String("config", file.Path(), configUsage)
	showVersion := fs.Bool("version", false, "print the version, commit, build date and Go version, and exit (the version command, --json for JSON)")
	sh.Set.Register(fs, "")
	fs.Usage = func() { usage(sh.Stderr, fs) }
	if err := ParseFlags(fs, args, sh.Prog, sh.Table); err != nil {
		return nil, err
	}
	if *showVersion {
		if err := version.Get().Write(sh.Stdout, sh.Prog); err != nil {
			return nil, err
		}
		return nil, ErrVersionShown
	}
	return fs, nil
}

// Recover, deferred by a binary's run, turns a panic into *err (exit
// status 1) saying it is a bug, with the stack in logger()'s debug log,
// never a Go stack trace on the terminal.
func Recover(err *error, logger func() *slog.Logger) {
	if r := recover(); r != nil {
		logger().Debug("panic", "value", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = fmt.Errorf("internal error (a bug in covmirror: please report it with this message; --log-level debug shows the stack): %v", r)
	}
}
