package demo

import (
	"strings"
	"testing"

	"github.com/covmirror/covmirror/tier"
)

// TestClosingFlagsPrintNoSecret: the closing commands name the run's tier
// with every flag it takes, but a password (in the URL's user information
// or its query) or a catalog property is left to where the run found it,
// and a note says so; a directory with a space is one shell word.
func TestClosingFlagsPrintNoSecret(t *testing.T) {
	for _, c := range []struct {
		name      string
		ts        tier.Settings
		want      string
		noteWants string
	}{
		{"object", tier.Settings{Kind: tier.Object}, "--state '/s t/demo-1' --durable object", ""},
		{"postgres", tier.Settings{Kind: tier.Postgres, Postgres: tier.PostgresSettings{URL: "postgres://app:hunter22@db:5432/test?sslmode=disable", Schema: "covmirror_demo_x"}},
			"--state '/s t/demo-1' --durable postgres --postgres-url 'postgres://app@db:5432/test?sslmode=disable' --postgres-schema covmirror_demo_x", ""},
		{"postgres query password", tier.Settings{Kind: tier.Postgres, Postgres: tier.PostgresSettings{URL: "postgres://db/test?password=hunter22", Schema: "s"}},
			"--state '/s t/demo-1' --durable postgres --postgres-schema s", "COVMIRROR_POSTGRES_URL"},
		{"catalog", tier.Settings{Kind: tier.Iceberg, Namespace: "covmirror_demo_y", CatalogProps: map[string]string{"s3.secret-access-key": "hunter22"}},
			"--state '/s t/demo-1' --namespace covmirror_demo_y", "COVMIRROR_CATALOG_PROPS"},
	} {
		flags, note := globalFlags("/s t/demo-1", c.ts)
		if flags != c.want || strings.Contains(flags+note, "hunter22") {
			t.Errorf("%s: flags %q, want %q", c.name, flags, c.want)
		}
		if (c.noteWants == "") != (note == "") || !strings.Contains(note, c.noteWants) {
			t.Errorf("%s: note %q, want one naming %q", c.name, note, c.noteWants)
		}
	}
}
