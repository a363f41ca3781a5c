package tier

import (
	"errors"
	"strings"
	"testing"
)

// TestDefaults: the zero Settings are the coverage table in the embedded
// catalog under DefaultState, the sink objects in a directory there.
func TestDefaults(t *testing.T) {
	var s Settings
	s.EnsureDefaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Kind != Iceberg || s.State != DefaultState || !s.TableIsPrimary() {
		t.Fatalf("%+v", s)
	}
	u, err := s.ObjectURL()
	if err != nil || !strings.HasPrefix(u, "file://") || !strings.HasSuffix(u, "/covmirror-data/objects") {
		t.Fatalf("ObjectURL %q, %v", u, err)
	}
}

// TestSettingsErrors: a malformed setting is a *SettingsError.
func TestSettingsErrors(t *testing.T) {
	var se *SettingsError
	if err := ParseKind("s3"); !errors.As(err, &se) {
		t.Errorf("kind s3: %v", err)
	}
	s := Settings{Kind: Postgres}
	if _, err := s.PostgresOptions(); !errors.As(err, &se) || !strings.Contains(err.Error(), "postgres.url") {
		t.Errorf("no URL: %v", err)
	}
	s.Postgres = PostgresSettings{URL: "postgres://u@h/db", Schema: "Bad"}
	if _, err := s.PostgresOptions(); !errors.As(err, &se) {
		t.Errorf("bad schema: %v", err)
	}
	s.Postgres = PostgresSettings{URL: "postgres://u@h/db", Layout: "Deltas"}
	if err := s.Validate(); !errors.As(err, &se) || !strings.Contains(err.Error(), `postgres.layout "Deltas"`) {
		t.Errorf("bad layout: %v", err)
	}
	s.Postgres.Layout = "deltas"
	if o, err := s.PostgresOptions(); err != nil || s.Validate() != nil || o.Layout != "deltas" {
		t.Errorf("layout deltas: %+v, %v", o, err)
	}
}
