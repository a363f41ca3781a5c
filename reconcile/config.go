package reconcile

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/redact"
)

// The kinds of checker a configuration names (Config.Kind).
const (
	KindSQL     = "sql"
	KindHTTP    = "http"
	KindIceberg = "iceberg"
)

// ConfigPrefix begins every checker key of the configuration file:
// reconcile.SINK.KEY = VALUE.
const ConfigPrefix = "reconcile"

// keysOf are the keys each kind takes besides kind and timeout.
var keysOf = map[string][]string{
	KindSQL:     {"driver", "dsn-env", "query", "count"},
	KindHTTP:    {"url", "token-env"},
	KindIceberg: {"table", "batch-column", "topic-column", "partition-column"},
}

// secretKeys are keys a credential would be written under: refused, with
// the key naming an environment variable to use instead.
var secretKeys = map[string]string{"dsn": "dsn-env", "token": "token-env", "password": "dsn-env", "secret": "token-env"}

// Config is one sink's checker as the configuration gives it, under the
// keys reconcile.SINK.KEY. Credentials never appear in it: DSNEnv and
// TokenEnv name the environment variables that hold them.
type Config struct {
	Sink string
	// Kind is KindSQL, KindHTTP or KindIceberg (key kind).
	Kind string
	// Timeout bounds one check (key timeout). Zero value: DefaultTimeout.
	Timeout time.Duration

	// Driver is DriverPostgres or DriverMySQL (key driver).
	Driver string
	// DSNEnv is the environment variable holding the DSN (key dsn-env).
	DSNEnv string
	// Query and Count are SQLChecker's (keys query and count).
	Query string
	Count bool

	// URL is HTTPChecker's template (key url); TokenEnv optionally names
	// the variable holding a bearer token (key token-env).
	URL, TokenEnv string

	// Table is the sink table's identifier, dot-separated (key table);
	// BatchColumn, TopicColumn and PartitionColumn are IcebergOptions'
	// (keys batch-column, topic-column and partition-column).
	Table                                     string
	BatchColumn, TopicColumn, PartitionColumn string
}

// AddConfigEntry adds one SINK.KEY=VALUE entry to entries, refusing an
// unknown key, a credential written in place (a DSN, a token), an invalid
// sink name and an entry given twice. It is the configuration file's and
// the flag's one reader of an entry; ParseConfig checks the values.
func AddConfigEntry(entries map[string]string, kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	i := strings.LastIndexByte(k, '.')
	if !ok || i <= 0 || i == len(k)-1 {
		return fmt.Errorf("checker entry %q is not %s.SINK.KEY = VALUE", redactEntry(kv), ConfigPrefix)
	}
	// The sink and the key are their exact bytes: " lake" is another
	// sink, never trimmed into "lake".
	sink, key := k[:i], k[i+1:]
	name := configKey(sink, key)
	if err := (coverage.Destination{Sink: sink, Topic: "t"}).Validate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if use, secret := secretKeys[key]; secret {
		return fmt.Errorf("%s: a credential is never written in the configuration (files are copied, committed and printed): put it in an environment variable and name the variable with %s", name, configKey(sink, use))
	}
	if !slices.Contains(allKeys(), key) {
		return fmt.Errorf("%s: unknown key %q: a checker's keys are %s", name, key, strings.Join(allKeys(), ", "))
	}
	entry := sink + "." + key
	if _, dup := entries[entry]; dup {
		return fmt.Errorf("%s is given twice: give it once", name)
	}
	entries[entry] = strings.TrimSpace(v)
	return nil
}

// configKey is the configuration key reconcile.SINK.KEY as printed: as it
// is where every byte is a plain printable one, quoted where a sink name
// holds a space at an end or a character a terminal would act on.
func configKey(sink, key string) string {
	k := ConfigPrefix + "." + sink + "." + key
	if q := strconv.Quote(k); q[1:len(q)-1] != k || strings.TrimSpace(k) != k || strings.Contains(k, " ") {
		return q
	}
	return k
}

// redactEntry is an entry with its value left out: a malformed entry may
// be a credential pasted in the wrong place.
func redactEntry(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k + "=..."
}

func allKeys() []string {
	keys := []string{"kind", "timeout"}
	for _, kind := range slices.Sorted(maps.Keys(keysOf)) {
		keys = append(keys, keysOf[kind]...)
	}
	return keys
}

// ParseConfig reads the entries AddConfigEntry gathered into one Config
// per sink, in sink order, each validated: a missing or unknown kind, a
// key of another kind, a missing required key or a bad value is an error
// naming the sink and the key.
func ParseConfig(entries map[string]string) ([]Config, error) {
	bySink := map[string]map[string]string{}
	for entry, v := range entries {
		i := strings.LastIndexByte(entry, '.')
		if i <= 0 {
			return nil, fmt.Errorf("%q: not %s.SINK.KEY", ConfigPrefix+"."+entry, ConfigPrefix)
		}
		sink, key := entry[:i], entry[i+1:]
		if bySink[sink] == nil {
			bySink[sink] = map[string]string{}
		}
		bySink[sink][key] = v
	}
	var out []Config
	for _, sink := range slices.Sorted(maps.Keys(bySink)) {
		c, err := parseSink(sink, bySink[sink])
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func parseSink(sink string, kv map[string]string) (Config, error) {
	name := func(key string) string { return configKey(sink, key) }
	c := Config{Sink: sink, Kind: kv["kind"]}
	allowed, ok := keysOf[c.Kind]
	if !ok {
		return c, fmt.Errorf("%s: kind %s is not %s, %s or %s", name("kind"), shown(c.Kind), KindSQL, KindHTTP, KindIceberg)
	}
	for _, key := range slices.Sorted(maps.Keys(kv)) {
		if key != "kind" && key != "timeout" && !slices.Contains(allowed, key) {
			return c, fmt.Errorf("%s: not a key of kind %s, whose keys are kind, timeout, %s", name(key), c.Kind, strings.Join(allowed, ", "))
		}
	}
	var err error
	if v, given := kv["timeout"]; given {
		if c.Timeout, err = time.ParseDuration(v); err != nil || c.Timeout <= 0 {
			return c, fmt.Errorf("%s: %s is not a positive duration such as 30s", name("timeout"), shown(v))
		}
	}
	if v, given := kv["count"]; given {
		if c.Count, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("%s: %s: use true or false", name("count"), shown(v))
		}
	}
	c.Driver, c.DSNEnv, c.Query = kv["driver"], kv["dsn-env"], kv["query"]
	c.URL, c.TokenEnv = kv["url"], kv["token-env"]
	c.Table, c.BatchColumn, c.TopicColumn, c.PartitionColumn = kv["table"], kv["batch-column"], kv["topic-column"], kv["partition-column"]
	return c, c.Validate()
}

// Validate reports a Config no checker can be built from, naming the sink
// and the key.
func (c *Config) Validate() error {
	name := func(key string) string { return configKey(c.Sink, key) }
	missing := func(key, what string) error {
		return fmt.Errorf("%s is missing: a %s checker needs %s", name(key), c.Kind, what)
	}
	switch c.Kind {
	case KindSQL:
		switch {
		case c.Driver != DriverPostgres && c.Driver != DriverMySQL:
			return fmt.Errorf("%s: %s is not %s (PostgreSQL) or %s (MySQL, MariaDB)", name("driver"), shown(c.Driver), DriverPostgres, DriverMySQL)
		case c.DSNEnv == "":
			return missing("dsn-env", "the name of the environment variable holding the DSN")
		case c.Query == "":
			return missing("query", "the query, with the driver's four parameters (topic, partition, start, end)")
		}
		return validEnvName(name("dsn-env"), c.DSNEnv)
	case KindHTTP:
		if c.URL == "" {
			return missing("url", "the URL template, with {topic}, {partition}, {start} and {end}")
		}
		// Refused before it is parsed, and never repeated: a password
		// holding %, /, ? or # fails to parse or parses as a path, and
		// either way would be quoted by an error.
		if strings.Contains(c.URL, "@") {
			return fmt.Errorf("%s: the URL template %s holds an @: credentials (user info before the host) are never written in the configuration; remove them and put a bearer token in an environment variable named by %s (an @ in a path or query is written %%40)", name("url"), redact.URL(c.URL), name("token-env"))
		}
		if _, err := url.Parse(probeTemplate(c.URL)); err != nil {
			return fmt.Errorf("%s: the URL template %s is not a URL: give http://HOST/PATH with {topic}, {partition}, {start} and {end}", name("url"), redact.URL(c.URL))
		}
		if c.TokenEnv != "" {
			return validEnvName(name("token-env"), c.TokenEnv)
		}
	case KindIceberg:
		if c.Table == "" || slices.Contains(strings.Split(c.Table, "."), "") {
			return fmt.Errorf("%s: %q is not the sink table's identifier, NAMESPACE.NAME", name("table"), c.Table)
		}
	default:
		return fmt.Errorf("%s: kind %s is not %s, %s or %s", name("kind"), shown(c.Kind), KindSQL, KindHTTP, KindIceberg)
	}
	return nil
}

// shown is a value for an error about it: quoted when it is a short word,
// else not repeated, since a DSN or a token pasted under the wrong key
// (driver, kind, timeout) must not reach the error and the log.
func shown(v string) string {
	if len(v) <= 32 && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == "" {
		return strconv.Quote(v)
	}
	return "(the value is not repeated: it may be a credential)"
}

// validEnvName refuses a value that cannot be a variable's name: most
// often the credential itself, written where its variable's name belongs.
// The value is not repeated.
func validEnvName(key, v string) error {
	for i, r := range v {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("%s is not an environment variable's name (letters, digits and _): give the name of the variable that holds the credential, never the credential", key)
		}
	}
	return nil
}
