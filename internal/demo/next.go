package demo

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/covmirror/covmirror/internal/redact"
	"github.com/covmirror/covmirror/tier"
)

// next prints the commands to look further, one per line, each runnable as
// printed on the run's own state: the durable tier's gaps, summary and plan,
// and the local tier of the pod that finished the stream. Nothing secret is
// printed: a password stays where the run found it (PGPASSWORD, ~/.pgpass,
// the environment or the configuration file), which the commands read too.
func (d *run) next() {
	flags, note := globalFlags(d.dir, d.settings)
	d.say("\nNext, each runs as printed (the demo's directory holds the coverage; pod-b's local tier is below it):")
	for _, command := range []string{"gaps", "query summary", "plan"} {
		d.say("  covmirror %s %s", flags, command)
	}
	d.say("  covmirror --state %s inspect", shellQuote(filepath.Join(d.dir, "pod-b")))
	if note != "" {
		d.say("  (%s)", note)
	}
}

// globalFlags are the global flags that name the run's durable tier, and a
// note on the settings they leave to where the run found them.
func globalFlags(dir string, ts tier.Settings) (flags, note string) {
	parts := []string{"--state", shellQuote(dir)}
	switch ts.Kind {
	case tier.Object:
		parts = append(parts, "--durable", "object")
	case tier.Postgres:
		parts = append(parts, "--durable", "postgres")
		if u, ok := publicURL(ts.Postgres.URL); ok {
			parts = append(parts, "--postgres-url", shellQuote(u))
		} else {
			note = "with the PostgreSQL URL of this run, from COVMIRROR_POSTGRES_URL or the configuration file: it holds a credential, so it is not printed"
		}
		parts = append(parts, "--postgres-schema", shellQuote(ts.Postgres.Schema))
	}
	if len(ts.CatalogProps) > 0 {
		parts = append(parts, "--namespace", shellQuote(ts.Namespace))
		note = strings.TrimPrefix(note+"; and ", "; and ") + "with the catalog properties of this run (COVMIRROR_CATALOG_PROPS or the configuration file): they may hold credentials, so they are not printed"
	}
	return strings.Join(parts, " "), note
}

// publicURL is rawURL without its password (pgx reads it from PGPASSWORD or
// ~/.pgpass then), or false when what is left still looks like it holds a
// credential.
func publicURL(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || redact.StrayAt(rawURL) {
		return "", false
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	// The user's name is no secret; a query's password= or sslkey= may be.
	return u.String(), redact.Text(u.RawQuery, false) == u.RawQuery
}

// shellQuote is s as one word of a POSIX shell: as it is when it holds only
// characters no shell treats specially, else single-quoted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
