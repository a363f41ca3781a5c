package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// config is a configuration file's settings: the global flags' names
// (state, namespace, table, writer, log.level, log.format, durable and the
// object.* and postgres.* keys, whose flags spell the dots as dashes), the
// token-file of serve and inspect --url, serve's allow-hosts and sinks
// (comma-separated lists), catalog properties as catalog.KEY = VALUE, serve's
// sync, serve's sources as source.NAME = REGIME and the streams' declared first batch ids
// as start.TOPIC = N. Precedence: flags, then COVMIRROR_*
// variables, then the file, then the built-in defaults. A # at the start of
// a line or after a space or tab starts a comment; \# is a literal #
// anywhere, and a # inside a word (pa#ss) is literal too.
//
//	# covmirror.conf
//	state = /var/lib/covmirror   # the pod's own disk
//	writer = pod-a
//	catalog.type = sql
//	catalog.uri = postgres://covmirror@db:5432/lake
//	catalog.sql.driver = pgx
//	catalog.sql.dialect = postgres
//	catalog.warehouse = file:///srv/warehouse
type config struct {
	path     string
	settings map[string]string
	props    map[string]string
	// sources are source.NAME = stored|broker-managed lines: the regimes
	// serve's position API enforces.
	sources map[string]string
	// starts are start.TOPIC = N lines: the streams' declared first batch
	// ids (--stream-start).
	starts map[string]uint64
}

var configKeys = []string{"state", "namespace", "table", "writer", "log.level", "log.format",
	"durable", "object.url", "object.s3.endpoint", "object.s3.region", "object.s3.force-path-style", "object.unsafe-store",
	"postgres.url", "postgres.schema", "token-file", "allow-hosts", "sync", "sinks"}

// configPath finds --config in the global flags (before the command name),
// or COVMIRROR_CONFIG.
func configPath(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break // the command name: its flags are its own
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "config" {
			if !hasValue && i+1 < len(args) && !isBoolFlag(name) {
				i++ // the flag's value
			}
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv("COVMIRROR_CONFIG")
}

func isBoolFlag(name string) bool {
	return name == "h" || name == "help" || name == "object-s3-force-path-style" || name == "object-unsafe-store"
}

// configReadError is a configuration file that exists and could not be
// read: a failure (exit 1), where a wrong path or a wrong line is a usage
// error (exit 2).
type configReadError struct{ error }

func (e configReadError) Unwrap() error { return e.error }

func loadConfig(path string) (*config, error) {
	c := &config{path: path, settings: map[string]string{}, props: map[string]string{}, sources: map[string]string{}, starts: map[string]uint64{}}
	if path == "" {
		return c, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if info, err := f.Stat(); err != nil || info.IsDir() {
		f.Close()
		return nil, fmt.Errorf("config file %s: is a directory, not a file of key = value lines", path)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	seen := map[string]int{} // key -> line: a key given twice is a mistake, not "the last wins"
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(stripComment(sc.Text()))
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		first, again := seen[k]
		seen[k] = n
		switch {
		case !ok || k == "":
			return nil, fmt.Errorf("%s:%d: %q is not key = value", path, n, line)
		case again:
			return nil, fmt.Errorf("%s:%d: key %q is given again (first on line %d): give it once", path, n, k, first)
		case strings.HasPrefix(k, "catalog.") && len(k) > len("catalog."):
			c.props[strings.TrimPrefix(k, "catalog.")] = v
		case strings.HasPrefix(k, "source.") && len(k) > len("source."):
			if _, err := parseRegime(v); err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", path, n, k, err)
			}
			c.sources[strings.TrimPrefix(k, "source.")] = v
		case strings.HasPrefix(k, "start.") && len(k) > len("start."):
			if err := addStart(c.starts, strings.TrimPrefix(k, "start."), v); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
		case slices.Contains(configKeys, k):
			c.settings[k] = v
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q: the keys are %s, catalog.PROPERTY, source.NAME and start.TOPIC", path, n, k, strings.Join(configKeys, ", "))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, configReadError{fmt.Errorf("config file %s: %w", path, err)}
	}
	return c, nil
}

// value is a global setting's default: the environment variable, else the
// file's value, else def.
func (c *config) value(key, env, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	if v, ok := c.settings[key]; ok {
		return v
	}
	return def
}

// stripComment cuts line at a # that starts it or follows a space or tab,
// and turns \# into #. Without this, "state = /srv/x   # a note" would name
// a directory with the note in it.
func stripComment(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '#':
			b.WriteByte('#')
			i++
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
