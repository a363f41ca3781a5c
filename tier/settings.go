package tier

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
)

// The durable tiers Settings.Kind chooses between.
const (
	Iceberg  = "iceberg"
	Object   = "object"
	Postgres = "postgres"
)

// DefaultState is Settings.State's default: a directory beside the
// working directory.
const DefaultState = lite.DefaultState

// CheckStoreWriters is how many concurrent conditional writes Open races
// on one version before a writer uses an S3 store.
const CheckStoreWriters = 16

// Settings say which durable tier to open and where. The zero value, after
// EnsureDefaults, is the coverage table in the embedded SQLite catalog
// under DefaultState.
type Settings struct {
	// Kind is Iceberg, Object or Postgres; zero: Iceberg.
	Kind string
	// State is the state directory: the local tier (LocalDir), and the
	// embedded catalog and warehouse when CatalogProps is empty, and the
	// sink objects when Object.URL is empty. Zero: DefaultState.
	State string
	// CatalogProps are iceberg-go catalog properties; none: the embedded
	// SQLite catalog under State.
	CatalogProps map[string]string
	// Namespace and Table name the coverage table; zero:
	// iceberg.DefaultNamespace and iceberg.DefaultTableName.
	Namespace string
	Table     string
	// Writer is this process's name in the rows it writes (positions).
	Writer   string
	Object   ObjectSettings
	Postgres PostgresSettings
	// Logger gets every library's log lines; nil: discarded.
	Logger *slog.Logger
}

// ObjectSettings say where the sink objects live when Kind is Object.
// Credentials come from the AWS environment, never from here.
type ObjectSettings struct {
	// URL is s3://BUCKET/PREFIX or file:///DIR; zero: a directory under
	// State.
	URL string
	// S3Endpoint is an S3-compatible store's endpoint; zero: AWS.
	S3Endpoint string
	// S3Region is the S3 region; zero: the AWS environment's.
	S3Region string
	// S3ForcePathStyle addresses buckets as endpoint/BUCKET.
	S3ForcePathStyle bool
	// Layout is how checkpoints are written: "sinks" (one object per sink,
	// under a compare-and-swap every writer meets) or "deltas" (one
	// write-once object per checkpoint, folded by the fleet role); reads
	// see both. Zero: object.LayoutSinkObjects.
	Layout string
	// UnsafeStore skips the conditional-write check before writing: for a
	// store known to honour If-Match that the check cannot run on.
	UnsafeStore bool
}

// PostgresSettings say where the coverage rows live when Kind is
// Postgres.
type PostgresSettings struct {
	// URL is postgres://USER@HOST:5432/DB, the password from PGPASSWORD or
	// ~/.pgpass; required with Kind Postgres.
	URL string
	// Schema holds the coverage, checkpoints, positions and blobs tables;
	// zero: postgres.DefaultSchema.
	Schema string
	// Layout is how checkpoints are written: "rows" (a row per
	// destination) or "deltas" (a row of the blobs table per checkpoint,
	// folded by the fleet role); reads see both. Zero:
	// postgres.LayoutRows.
	Layout string
}

// SettingsError is a malformed setting: the caller's to correct, where
// any other error from Open is a store that could not be opened.
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

func settingsError(format string, a ...any) error {
	return &SettingsError{fmt.Errorf(format, a...)}
}

// EnsureDefaults fills in the zero fields' defaults.
func (s *Settings) EnsureDefaults() {
	if s.Kind == "" {
		s.Kind = Iceberg
	}
	if s.State == "" {
		s.State = DefaultState
	}
	if s.Namespace == "" {
		s.Namespace = iceberg.DefaultNamespace
	}
	if s.Table == "" {
		s.Table = iceberg.DefaultTableName
	}
	if s.Postgres.Schema == "" {
		s.Postgres.Schema = postgres.DefaultSchema
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate checks Kind; what only one tier needs (Postgres.URL) is
// checked when that tier is opened, so that a command that opens only the
// local tier runs without it.
func (s *Settings) Validate() error {
	switch object.Layout(s.Object.Layout) {
	case "", object.LayoutSinkObjects, object.LayoutDeltas:
	default:
		return settingsError("object.layout %q: use %s (one object per sink: a handful of pods) or %s (one object per checkpoint, folded by the fleet role: a fleet)", s.Object.Layout, object.LayoutSinkObjects, object.LayoutDeltas)
	}
	switch postgres.Layout(s.Postgres.Layout) {
	case "", postgres.LayoutRows, postgres.LayoutDeltas:
	default:
		return settingsError("postgres.layout %q: use %s (a row per destination per checkpoint: up to a few hundred pods at 10 s) or %s (a row per checkpoint, folded by the fleet role: a fleet)", s.Postgres.Layout, postgres.LayoutRows, postgres.LayoutDeltas)
	}
	return ParseKind(s.Kind)
}

// ParseKind checks a tier's name.
func ParseKind(v string) error {
	switch v {
	case Iceberg, Object, Postgres:
		return nil
	}
	return settingsError("durable %q: use iceberg (the coverage table in raw's catalog), object (a sink object per sink under object.url) or postgres (coverage rows in raw's PostgreSQL at postgres.url)", v)
}

// TableIsPrimary: the coverage table is the durable tier (Kind Iceberg);
// with the other tiers it is their replica.
func (s *Settings) TableIsPrimary() bool { return s.Kind == Iceberg || s.Kind == "" }

// Noun names the configured tier as an operator knows it.
func (s *Settings) Noun() string {
	switch s.Kind {
	case Object:
		return "the sink objects"
	case Postgres:
		return "the coverage rows in PostgreSQL"
	}
	return "the coverage table"
}

// LocalDir is the local tier's directory under State.
func (s *Settings) LocalDir() string { return lite.LocalDir(s.state()) }

func (s *Settings) state() string {
	if s.State == "" {
		return DefaultState
	}
	return s.State
}

// ObjectURL is Object.URL, or the embedded default under State.
func (s *Settings) ObjectURL() (string, error) {
	if s.Object.URL != "" {
		return s.Object.URL, nil
	}
	dir, err := filepath.Abs(filepath.Join(s.state(), "objects"))
	if err != nil {
		return "", fmt.Errorf("object store under --state %s: %w", s.state(), err)
	}
	// Built, not concatenated: a %, # or ? in the path is escaped, so the
	// URL parses back to exactly this directory.
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String(), nil
}

// PostgresOptions are the postgres tier's options; a missing URL is a
// SettingsError that says where to give one.
func (s *Settings) PostgresOptions() (postgres.Options, error) {
	if s.Postgres.URL == "" {
		return postgres.Options{}, &SettingsError{errors.New("durable = postgres needs the database: give --postgres-url, COVMIRROR_POSTGRES_URL or postgres.url (postgres://USER@HOST:5432/DB; the password from PGPASSWORD or ~/.pgpass)")}
	}
	schema := s.Postgres.Schema
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	if err := postgres.ValidateSchema(schema); err != nil {
		return postgres.Options{}, settingsError("postgres.schema: %w", err)
	}
	return postgres.Options{URL: s.Postgres.URL, Schema: schema, Logger: s.Logger, Layout: postgres.Layout(s.Postgres.Layout)}, nil
}
