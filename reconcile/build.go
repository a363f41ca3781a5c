package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/redact"
)

// BuildOptions configures Build. The zero value of every field is a
// documented default.
type BuildOptions struct {
	// LookupEnv reads the environment variables the configuration names.
	// Zero value: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Catalog holds the Iceberg sink tables (the catalog covmirror already
	// opens). Zero value: an iceberg checker is an error.
	Catalog catalog.Catalog
	// HTTPClient sends the HTTP checkers' requests. Zero value: a client of
	// their own.
	HTTPClient *http.Client
}

// NeedsCatalog reports whether any of cfgs is an Iceberg checker, which
// needs BuildOptions.Catalog.
func NeedsCatalog(cfgs []Config) bool {
	return slices.ContainsFunc(cfgs, func(c Config) bool { return c.Kind == KindIceberg })
}

// Checkers are the checkers Build made, by sink; Close releases their
// database handles.
type Checkers struct {
	Checkers map[string]Checker
	dbs      []*sql.DB
}

// Close closes the SQL checkers' databases.
func (cs *Checkers) Close() error {
	var errs []error
	for _, db := range cs.dbs {
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}

// Build makes each Config's checker, reading its credentials from the
// environment. An unset variable, or one that is empty, is an error naming
// the sink, the key and the variable. No credential appears in an error
// Build returns or in any error of the checkers it makes: a DSN, its
// password and a token are redacted (internal/redact) wherever a driver
// quotes them.
func Build(cfgs []Config, opts BuildOptions) (*Checkers, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	out := &Checkers{Checkers: map[string]Checker{}}
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			_ = out.Close()
			return nil, err
		}
		chk, err := build(c, opts, out)
		if err != nil {
			_ = out.Close()
			return nil, fmt.Errorf("reconcile: sink %q: %w", c.Sink, err)
		}
		out.Checkers[c.Sink] = chk
	}
	return out, nil
}

func build(c Config, opts BuildOptions, out *Checkers) (Checker, error) {
	env := func(key, name string) (string, error) {
		v, ok := opts.LookupEnv(name)
		if !ok || strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("%s names the environment variable %q, which is unset or empty: export it before running", configKey(c.Sink, key), name)
		}
		return v, nil
	}
	switch c.Kind {
	case KindSQL:
		dsn, err := env("dsn-env", c.DSNEnv)
		if err != nil {
			return nil, err
		}
		secrets := dsnSecrets(c.Driver, dsn)
		if c.Driver == DriverPostgres {
			// pgx's stdlib parses the DSN only when it connects: every check
			// would fail alike, where a malformed DSN is a configuration
			// mistake (mysql's sql.Open refuses it at once).
			if _, err := pgx.ParseConfig(dsn); err != nil {
				return nil, redact.Error(fmt.Errorf("the DSN in %s: %w", c.DSNEnv, err), secrets...)
			}
		}
		db, err := sql.Open(c.Driver, dsn)
		if err != nil {
			return nil, redact.Error(fmt.Errorf("opening the %s database of %s: %w", c.Driver, c.DSNEnv, err), secrets...)
		}
		out.dbs = append(out.dbs, db)
		chk, err := NewSQL(db, c.Query, SQLOptions{Count: c.Count, Timeout: c.Timeout})
		if err != nil {
			return nil, err
		}
		return redacting{chk, secrets}, nil
	case KindHTTP:
		o := HTTPOptions{Client: opts.HTTPClient, Timeout: c.Timeout}
		if c.TokenEnv != "" {
			tok, err := env("token-env", c.TokenEnv)
			if err != nil {
				return nil, err
			}
			o.Token = strings.TrimSpace(tok)
		}
		chk, err := NewHTTP(c.URL, o)
		if err != nil {
			return nil, err
		}
		return redacting{chk, []string{o.Token}}, nil
	case KindIceberg:
		if opts.Catalog == nil {
			return nil, errors.New("an iceberg checker needs the catalog, and none was given")
		}
		chk, err := NewIceberg(IcebergOptions{Catalog: opts.Catalog, Table: strings.Split(c.Table, "."), BatchColumn: c.BatchColumn,
			TopicColumn: c.TopicColumn, PartitionColumn: c.PartitionColumn, Timeout: c.Timeout})
		if err != nil {
			return nil, err
		}
		// The catalog's errors may echo its request's credentials.
		return redacting{chk, nil}, nil
	}
	return nil, fmt.Errorf("kind %q is not %s, %s or %s", c.Kind, KindSQL, KindHTTP, KindIceberg)
}

// dsnSecrets are the strings of dsn an error must never show: the DSN
// itself and its password, as the driver parses it.
func dsnSecrets(driver, dsn string) []string {
	secrets := []string{dsn}
	switch driver {
	case DriverPostgres:
		if cfg, err := pgx.ParseConfig(dsn); err == nil {
			secrets = append(secrets, cfg.Password)
		}
	case DriverMySQL:
		if cfg, err := mysql.ParseDSN(dsn); err == nil {
			secrets = append(secrets, cfg.Passwd)
		}
	}
	return secrets
}

// redacting is a checker whose errors have its credentials replaced.
type redacting struct {
	Checker
	secrets []string
}

func (r redacting) Held(ctx context.Context, d coverage.Destination, ranges []coverage.Range) (*coverage.RangeSet, error) {
	held, err := r.Checker.Held(ctx, d, ranges)
	return held, redact.Error(err, r.secrets...)
}
