package iceberg

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers type=rest
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3:// warehouses
	_ "github.com/jackc/pgx/v5/stdlib"             // database/sql driver "pgx", for the SQL catalog on PostgreSQL
	_ "modernc.org/sqlite"                         // database/sql driver "sqlite", pure Go, for the embedded default

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/redact"
)

// EmbeddedProps are the catalog properties of the embedded default: the SQL
// catalog on a SQLite file and a warehouse directory, both under stateDir.
// The DSN sets WAL and a busy timeout so that two processes (a pipeline and a
// scheduled compaction, say) can share the catalog.
func EmbeddedProps(stateDir string) (map[string]string, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("iceberg: state directory %s: %w", stateDir, err)
	}
	warehouse := filepath.Join(abs, "warehouse")
	if err := os.MkdirAll(warehouse, 0o755); err != nil {
		return nil, fmt.Errorf("iceberg: creating the warehouse %s: %w", warehouse, err)
	}
	// Both are URLs (SQLite opens "file:" names as URIs): built by
	// concatenation, a # or ? in the path would end it early and a % would
	// be decoded, putting the catalog outside stateDir. net/url escapes
	// them, and SQLite and iceberg-go's file IO decode them back.
	db := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(abs, "catalog.db"))}).String()
	return map[string]string{
		"type":                "sql",
		"uri":                 db + strings.TrimPrefix(SQLiteDSN(""), "file:"),
		sqlcat.DriverKey:      "sqlite",
		sqlcat.DialectKey:     string(sqlcat.SQLite),
		"warehouse":           (&url.URL{Scheme: "file", Path: filepath.ToSlash(warehouse)}).String(),
		"init_catalog_tables": "true",
	}, nil
}

// SQLiteDSN is the modernc.org/sqlite DSN for a catalog file shared by
// several processes: WAL journaling and a 30 s busy timeout.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
}

// OpenCatalog opens raw's catalog from iceberg-go catalog properties (type,
// uri, warehouse, s3.*, rest.*, sql.driver, sql.dialect, ...) through
// iceberg-go's registry. "sql" catalogs with driver "sqlite" (modernc) or
// "pgx" (PostgreSQL) and "rest" catalogs work from properties alone. The
// name is the catalog's name in iceberg-go's configuration file, usually
// empty.
func OpenCatalog(ctx context.Context, name string, props map[string]string) (catalog.Catalog, error) {
	if props["type"] == "" && !strings.Contains(props["uri"], "://") {
		return nil, fmt.Errorf("iceberg: catalog properties name no type (sql, rest, ...) and no uri with a scheme: got keys %s", keys(props))
	}
	if props["type"] == "sql" {
		if err := sqlPrecheck(props); err != nil {
			return nil, err
		}
	}
	// Remembered for every later output of the process: the catalog's
	// errors after it opened, and those of the FileIO its keys open, are
	// printed far from these properties.
	redact.Remember(rememberedSecrets(props)...)
	cat, err := catalog.Load(ctx, name, ice.Properties(props))
	if err != nil {
		// The uri as redact.URL shows it (scheme, host and path): its
		// password may hold what no shape of a text bounds (a ' or a
		// space), and its query a key.
		return nil, fmt.Errorf("%w: opening the %q catalog at %s: %w", coverage.ErrUnavailable, props["type"], redact.URL(props["uri"]), redact.Error(err, propSecrets(props)...))
	}
	return cat, nil
}

// sqlPrecheck catches the SQL catalog's easy mistakes with a clear message
// before database/sql turns them into a late, vague one.
func sqlPrecheck(props map[string]string) error {
	switch props[sqlcat.DriverKey] {
	case "":
		return fmt.Errorf("iceberg: the sql catalog needs %s (sqlite or pgx)", sqlcat.DriverKey)
	case "sqlite", "pgx":
	default:
		return fmt.Errorf("iceberg: %s=%q is not linked in: use sqlite (modernc.org/sqlite) or pgx (PostgreSQL)", sqlcat.DriverKey, props[sqlcat.DriverKey])
	}
	if props[sqlcat.DialectKey] == "" {
		return fmt.Errorf("iceberg: the sql catalog needs %s (sqlite or postgres)", sqlcat.DialectKey)
	}
	if props["uri"] == "" {
		return fmt.Errorf("iceberg: the sql catalog needs a uri (a SQLite DSN or a PostgreSQL URL)")
	}
	return nil
}

func keys(m map[string]string) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return coverage.Names(out)
}

// propSecrets are the catalog properties an error must not show, by key
// (a credential, token, password, signature or S3 key, and every header.*
// a REST catalog sends, whose names are the vendor's: X-Vendor-Auth), and
// the user information of any property that is a URL (the uri, and a
// warehouse=s3://KEY:SECRET@bucket/ a REST catalog sends in a query): the
// catalog's own errors may quote them, percent-encoded where no shape
// finds them.
func propSecrets(props map[string]string) []string {
	var out []string
	for k, v := range props {
		if secretProp(k) {
			out = append(out, v)
		}
		out = append(out, userSecrets(v)...)
	}
	return out
}

// rememberedSecrets are propSecrets but for an access key's id (an S3
// access-key-id), a name rather than a secret, often a word of the text
// (the deployment's name) that every later output would lose.
func rememberedSecrets(props map[string]string) []string {
	id := make(map[string]bool)
	for k, v := range props {
		lk := strings.ToLower(k)
		if strings.HasSuffix(lk, "key-id") || strings.HasSuffix(lk, "key_id") || strings.HasSuffix(lk, "keyid") {
			id[v] = true
		}
	}
	var out []string
	for _, s := range propSecrets(props) {
		if !id[s] {
			out = append(out, s)
		}
	}
	return out
}

// openUserInfo is a URL's user information up to its last @, for a value
// url.Parse refuses (a password holding a /).
var openUserInfo = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://([^\s"<>]*)@`)

// userSecrets are the credentials in v's user information, if v is a URL:
// its password, or for http(s) a user name alone.
func userSecrets(v string) []string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		if m := openUserInfo.FindStringSubmatch(v); m != nil {
			// Unparsable: the whole user information, and what follows
			// its first colon, whichever an echo quotes.
			_, pw, _ := strings.Cut(m[1], ":")
			return []string{m[1], pw}
		}
		return nil
	}
	if pw, ok := u.User.Password(); ok {
		return []string{pw}
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		// https://TOKEN@catalog/: a user name alone is a token (a database
		// URL's is its role, which its errors name).
		return []string{u.User.Username()}
	}
	return nil
}

// secretProp reports whether a catalog property's value may be a
// credential, by its key.
func secretProp(key string) bool {
	lk := strings.ToLower(key)
	if strings.HasPrefix(lk, "header.") {
		return true
	}
	for _, word := range []string{"secret", "token", "credential", "password", "key", "auth", "signature", "session"} {
		if strings.Contains(lk, word) {
			return true
		}
	}
	return false
}
