package iceberg

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/version"
)

func TestIncompatibleTableIsRefusedAndLeftAlone(t *testing.T) {
	ctx := context.Background()
	props, _ := EmbeddedProps(t.TempDir())
	cat, err := OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	_ = cat.CreateNamespace(ctx, []string{"covmirror"}, nil)
	other := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "sink", Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 2, Name: "range_start", Type: ice.PrimitiveTypes.String, Required: true})
	if _, err := cat.CreateTable(ctx, []string{"covmirror", "coverage"}, other); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, cat, Options{})
	if !errors.Is(err, ErrIncompatibleTable) || !strings.Contains(err.Error(), "column topic is missing") ||
		!strings.Contains(err.Error(), "column range_start is string, want long") {
		t.Fatalf("open over an incompatible table: %v", err)
	}
	tbl, _ := cat.LoadTable(ctx, []string{"covmirror", "coverage"})
	if len(tbl.Schema().Fields()) != 2 {
		t.Fatalf("the incompatible table was altered: %s", tbl.Schema())
	}
}

func TestUnreachableCatalogIsAClearError(t *testing.T) {
	ctx := context.Background()
	_, err := OpenCatalog(ctx, "", map[string]string{
		"type": "sql", "uri": "postgres://covmirror:secret@127.0.0.1:1/test?sslmode=disable&connect_timeout=2",
		"sql.driver": "pgx", "sql.dialect": "postgres", "warehouse": "file://" + t.TempDir(), "init_catalog_tables": "true",
	})
	if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("open of an unreachable catalog: %v", err)
	}
	for _, props := range []map[string]string{
		{},
		{"type": "sql", "uri": "x"},
		{"type": "sql", "uri": "x", "sql.driver": "mysql", "sql.dialect": "mysql"},
	} {
		if _, err := OpenCatalog(ctx, "", props); err == nil {
			t.Fatalf("props %v opened", props)
		}
	}
}

func TestAppendRefusesWhatTheTableCannotHold(t *testing.T) {
	tbl := openEmbedded(t)
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	err := tbl.Append(context.Background(), durable.Checkpoint{Name: "c1", Writer: "w",
		Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 1, End: MaxBatchEnd + 1}}}}})
	if !errors.Is(err, coverage.ErrInvalidRange) {
		t.Fatalf("append past MaxBatchEnd: %v", err)
	}
	if err := tbl.Append(context.Background(), durable.Checkpoint{Writer: "w"}); err == nil {
		t.Fatal("a commit without a name was accepted")
	}
}

func TestAppendOfALandedCheckpointIsNotRepeated(t *testing.T) {
	ctx := context.Background()
	tbl := openEmbedded(t)
	c := durable.Checkpoint{Name: "pod/7", Writer: "pod", Ranges: []coverage.DestinationRanges{{
		Destination: coverage.Destination{Sink: "lake", Topic: "t"}, Ranges: []coverage.Range{{Start: 1, End: 5}}}}}
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.MayHaveLanded = true
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	loaded, _ := tbl.Load(ctx)
	if n := len(loaded.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots: a landed checkpoint was appended again", n)
	}
	// The snapshot names the covmirror that wrote it.
	if got, want := loaded.CurrentSnapshot().Summary.Properties[SummaryVersion], version.Get().String(); got != want || got == "" {
		t.Errorf("snapshot summary %s = %q, want %q", SummaryVersion, got, want)
	}
	if ok, err := tbl.Landed(ctx, "pod", "pod/7"); !ok || err != nil {
		t.Fatalf("Landed: %v, %v", ok, err)
	}
}

// TestExpireOptionsValidate: negative values are refused, zero ones are
// the documented defaults.
func TestExpireOptionsValidate(t *testing.T) {
	for _, o := range []durable.ExpireOptions{{OlderThan: -1}, {RetainLast: -1}} {
		o.EnsureDefaults()
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	var o durable.ExpireOptions
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || o.OlderThan != 15*time.Minute || o.RetainLast != 20 {
		t.Errorf("defaults %+v: %v", o, err)
	}
}
