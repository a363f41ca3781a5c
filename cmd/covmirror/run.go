package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/postgres"
)

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ error }

// errHelp is returned after --help printed the usage: exit status 0.
var errHelp = errors.New("help requested")

func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
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
		"record":      {"record a range a sink has acknowledged into the local tier", runRecord},
		"checkpoint":  {"checkpoint the local tier's pending ranges into the coverage table", runCheckpoint},
		"inspect":     {"show the local tier's diagnostics (offline, or --url of a running pod)", runInspect},
		"gaps":        {"list committed gaps of every sink against the reference (raw)", runGaps},
		"query":       {"run a canned DuckDB query (coverage, gaps, summary, lag, files) on the table", runQuery},
		"plan":        {"print the recovery plan: replay tasks from committed coverage", runPlan},
		"compact":     {"rewrite the coverage table's small files, set-equal", runCompact},
		"demo":        {"run the whole system once on embedded defaults and explain each step", runDemo},
		"serve":       {"checkpoint on an interval; serve the record API (/v1/), /metrics and /debug/coverage", runServe},
		"version":     {"print the version", runVersion},
		"mirror":      {"with --durable object: copy the sink objects into the coverage table, once or --every D", runMirror},
		"check-store": {"prove the object store honours conditional writes (one winner of N same-ETag writes)", runCheckStore},
	}
}

// globals are the settings every subcommand shares.
type globals struct {
	stdout, stderr io.Writer
	// stdin is what a file argument of "-" reads (--acked-ends -).
	stdin io.Reader
	// starts are the streams' declared first batch ids by topic
	// (--stream-start, else the config file's start.TOPIC): an extent
	// without a start takes its topic's.
	starts    map[string]uint64
	state     string
	props     map[string]string
	namespace string
	table     string
	writer    string
	// durable is the durable tier: durableIceberg, durableObject or
	// durablePostgres.
	durable  string
	object   objectSettings
	postgres postgresSettings
	// localSync is serve's --sync: local.Options.Sync.
	localSync bool
	// cfg is the configuration file's settings, for the commands' own keys
	// (serve's source.NAME).
	cfg *config
	// logger is slog to stderr at --log-level in --log-format: every
	// library the commands open gets it.
	logger *slog.Logger
}

// Run runs the command line args, writing to stdout and stderr. A panic
// anywhere in the command's goroutine is a bug: it becomes an error (exit
// status 1) saying so, with the stack in the debug log, never a Go stack
// trace on the terminal.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	g := &globals{stdout: stdout, stderr: stderr, stdin: os.Stdin, props: map[string]string{}, logger: slog.New(slog.DiscardHandler)}
	defer func() {
		if r := recover(); r != nil {
			g.logger.Debug("panic", "value", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error (a bug in covmirror: please report it with this message; --log-level debug shows the stack): %v", r)
		}
	}()
	return run(ctx, g, args)
}

func run(ctx context.Context, g *globals, args []string) error {
	stdout, stderr := g.stdout, g.stderr
	cfg, err := loadConfig(configPath(args))
	var readErr configReadError
	if errors.As(err, &readErr) {
		return err
	} else if err != nil {
		return usageError{err}
	}
	fs := flag.NewFlagSet("covmirror", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String("config", cfg.path, "configuration file: global settings and catalog.* properties as key = value lines (env COVMIRROR_CONFIG)")
	fs.StringVar(&g.state, "state", cfg.value("state", "COVMIRROR_STATE", "./covmirror-data"), "state directory: the local tier, and the embedded catalog and warehouse when no catalog is configured (env COVMIRROR_STATE)")
	fs.Func("catalog-prop", "iceberg-go catalog property key=value, repeatable (env COVMIRROR_CATALOG_PROPS, comma-separated; config file catalog.KEY = VALUE); none: the embedded SQLite catalog under --state", func(kv string) error {
		return addProp(g.props, kv)
	})
	fs.StringVar(&g.namespace, "namespace", cfg.value("namespace", "COVMIRROR_NAMESPACE", iceberg.DefaultNamespace), "namespace of the coverage table (env COVMIRROR_NAMESPACE)")
	fs.StringVar(&g.table, "table", cfg.value("table", "COVMIRROR_TABLE", iceberg.DefaultTableName), "name of the coverage table (env COVMIRROR_TABLE)")
	host, _ := os.Hostname()
	fs.StringVar(&g.writer, "writer", cfg.value("writer", "COVMIRROR_WRITER", host), "this process's name in the table's rows (env COVMIRROR_WRITER)")
	fs.StringVar(&g.durable, "durable", cfg.value("durable", "COVMIRROR_DURABLE", durableIceberg), "the durable tier: iceberg (the coverage table in raw's catalog), object (a sink object per sink under --object-url) or postgres (coverage rows in raw's PostgreSQL at --postgres-url); with object or postgres the table is their queryable mirror (env COVMIRROR_DURABLE)")
	g.postgres.url = cfg.value("postgres.url", "COVMIRROR_POSTGRES_URL", "")
	fs.Var(secretFlag{&g.postgres.url}, "postgres-url", "with --durable postgres: the database, postgres://USER@HOST:5432/DB (the password from PGPASSWORD or ~/.pgpass, never here) (env COVMIRROR_POSTGRES_URL)")
	fs.StringVar(&g.postgres.schema, "postgres-schema", cfg.value("postgres.schema", "COVMIRROR_POSTGRES_SCHEMA", postgres.DefaultSchema), "with --durable postgres: the schema of the coverage, checkpoints and positions tables, created if missing (env COVMIRROR_POSTGRES_SCHEMA)")
	fs.StringVar(&g.object.url, "object-url", cfg.value("object.url", "COVMIRROR_OBJECT_URL", ""), "with --durable object: s3://BUCKET/PREFIX or file:///DIR; none: a directory under --state (env COVMIRROR_OBJECT_URL)")
	fs.StringVar(&g.object.endpoint, "object-s3-endpoint", cfg.value("object.s3.endpoint", "COVMIRROR_OBJECT_S3_ENDPOINT", ""), "S3 endpoint URL for an S3-compatible store; none: AWS (env COVMIRROR_OBJECT_S3_ENDPOINT); credentials come from the AWS environment")
	fs.StringVar(&g.object.region, "object-s3-region", cfg.value("object.s3.region", "COVMIRROR_OBJECT_S3_REGION", ""), "S3 region; none: the AWS environment's, else us-east-1 (env COVMIRROR_OBJECT_S3_REGION)")
	forcePathStyle, pathErr := parseBoolSetting("object.s3.force-path-style", cfg.value("object.s3.force-path-style", "COVMIRROR_OBJECT_S3_FORCE_PATH_STYLE", ""))
	fs.BoolVar(&g.object.forcePathStyle, "object-s3-force-path-style", forcePathStyle, "address buckets as endpoint/BUCKET rather than BUCKET.endpoint, as most S3-compatible stores need (env COVMIRROR_OBJECT_S3_FORCE_PATH_STYLE)")
	unsafeStore, unsafeErr := parseBoolSetting("object.unsafe-store", cfg.value("object.unsafe-store", "COVMIRROR_OBJECT_UNSAFE_STORE", ""))
	fs.BoolVar(&g.object.unsafeStore, "object-unsafe-store", unsafeStore, "write to an S3 store without running check-store on it first: only for a store known to honour If-Match (env COVMIRROR_OBJECT_UNSAFE_STORE)")
	flagStarts := map[string]uint64{}
	fs.Func("stream-start", "TOPIC=N: the first batch id of TOPIC's stream where it is not 0, repeatable (config file start.TOPIC = N): a source extent without a start (--acked-ends, the API's extents) takes its topic's", func(kv string) error {
		topic, n, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("stream start %q is not TOPIC=N", kv)
		}
		return addStart(flagStarts, topic, n)
	})
	logLevel := fs.String("log-level", cfg.value("log.level", "COVMIRROR_LOG_LEVEL", "info"), "log level on stderr: debug, info, warn or error (env COVMIRROR_LOG_LEVEL; config file log.level)")
	logFormat := fs.String("log-format", cfg.value("log.format", "COVMIRROR_LOG_FORMAT", "text"), "log format on stderr: text or json (env COVMIRROR_LOG_FORMAT; config file log.format)")
	fs.Usage = func() { usage(stderr, fs) }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := errors.Join(pathErr, unsafeErr, parseDurable(g.durable)); err != nil {
		return usageError{err}
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return usageError{err}
	}
	g.logger = logger
	g.cfg = cfg
	// Declared starts come whole from one source: flags, else the file.
	g.starts = cfg.starts
	if len(flagStarts) > 0 {
		g.starts = flagStarts
	}
	// Catalog properties come whole from one source: flags, else the
	// environment, else the configuration file.
	if env := os.Getenv("COVMIRROR_CATALOG_PROPS"); env != "" && len(g.props) == 0 {
		for _, kv := range strings.Split(env, ",") {
			if err := addProp(g.props, kv); err != nil {
				return usageError{fmt.Errorf("COVMIRROR_CATALOG_PROPS: %w", err)}
			}
		}
	}
	if len(g.props) == 0 {
		maps.Copy(g.props, cfg.props)
	}
	if fs.NArg() == 0 {
		usage(stderr, fs)
		return usageError{errors.New("no command given")}
	}
	name := fs.Arg(0)
	if name == "help" {
		usage(stdout, fs)
		return nil
	}
	cmd, ok := commands[name]
	if !ok {
		return usageError{fmt.Errorf("unknown command %q (try covmirror --help)", name)}
	}
	return cmd.run(ctx, g, fs.Args()[1:])
}

func addProp(props map[string]string, kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fmt.Errorf("catalog property %q is not key=value", kv)
	}
	props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	return nil
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: covmirror [global flags] COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-11s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nglobal flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nEach command takes --help. Exit status: 0 success, 1 failure, 2 usage error.")
}

// subFlags is a subcommand's flag set, printing its usage on --help.
func subFlags(g *globals, name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(g.stderr)
	fs.Usage = func() {
		fmt.Fprintf(g.stderr, "usage: covmirror %s %s\n\n%s\n\nflags:\n", name, args, commands[name].summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a subcommand's flags, mapping errors to exit statuses.
func parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected arguments %q", fs.Name(), fs.Args())}
	}
	return nil
}

// parseFlags is parse for a subcommand that takes arguments besides flags.
// The flag package would print a bad flag's error and the whole usage, and
// main prints the error again: parsing is silent, --help prints the usage,
// and a mistake is returned once, with a pointer to --help.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.VisitAll(func(f *flag.Flag) {
		if _, wrapped := f.Value.(*onceValue); !wrapped && !repeatableFlags[f.Name] {
			f.Value = &onceValue{Value: f.Value, name: f.Name}
		}
	})
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage()
		return errHelp
	}
	err = redactFlagError(err, fs, args)
	switch {
	case fs.Name() == "covmirror": // the global flags
		return usageError{fmt.Errorf("%w (covmirror --help lists the flags)", err)}
	}
	return usageError{fmt.Errorf("%s: %w (covmirror %[1]s --help lists the flags)", fs.Name(), err)}
}

// repeatableFlags may be given more than once; every other flag once: a
// second value would silently replace the first (a wrong answer where the
// flag is --sink or --reference).
var repeatableFlags = map[string]bool{"catalog-prop": true, "source": true, "stream-start": true}

// onceValue refuses a flag's second value.
type onceValue struct {
	flag.Value
	name string
	seen bool
}

func (v *onceValue) Set(s string) error {
	if v.seen {
		if _, secret := v.Value.(secretFlag); secret {
			s = redacted(s) // the first is redacted by its String
		}
		return fmt.Errorf("given twice (%q, then %q): give --%s once", v.Value.String(), s, v.name)
	}
	v.seen = true
	return v.Value.Set(s)
}

// String is the wrapped value's; "" for the zero onceValue, on which the
// flag package calls it to tell a default from none in --help.
func (v *onceValue) String() string {
	if v == nil || v.Value == nil {
		return ""
	}
	return v.Value.String()
}

// IsBoolFlag keeps -json and the like valid without a value.
func (v *onceValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// newLogger is slog to w at the named level, in the named format.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lvl = slog.LevelDebug
	case "info":
		lvl = slog.LevelInfo
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: use text or json", format)
}
