package lazysubstrait_test

import (
	"slices"
	"testing"

	ice "github.com/apache/iceberg-go"
	icesubstrait "github.com/apache/iceberg-go/table/substrait"
	"github.com/substrait-io/substrait"
	"github.com/substrait-io/substrait-go/v8/extensions"

	"github.com/covmirror/covmirror/internal/lazysubstrait"
)

// TestLoadFillsTheCollectionIcebergGoUses: the collection iceberg-go's
// substrait package captured at init is this package's, a filtered scan's
// conversion fails before Load and works after it, and Load leaves the
// collection with every function substrait-go's own loader would have
// loaded, besides iceberg-go's.
func TestLoadFillsTheCollectionIcebergGoUses(t *testing.T) {
	got, err := extensions.GetDefaultCollection()
	if err != nil || got != lazysubstrait.TheCollection {
		t.Fatalf("the default collection is %p (%v), want this package's %p", got, err, lazysubstrait.TheCollection)
	}
	schema := ice.NewSchema(0, ice.NestedField{ID: 1, Name: "sink", Type: ice.PrimitiveTypes.String, Required: true})
	filter, err := ice.BindExpr(schema, ice.EqualTo(ice.Reference("sink"), "lake"), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := icesubstrait.ConvertExpr(schema, filter, true); err == nil {
		t.Fatal("a conversion before Load succeeded: the default collection was loaded at init after all")
	} else {
		t.Logf("before Load: %v", err)
	}
	if err := lazysubstrait.Load(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := icesubstrait.ConvertExpr(schema, filter, true); err != nil {
		t.Fatalf("a conversion after Load: %v", err)
	}

	// What substrait-go's loader builds, file by file.
	var want extensions.Collection
	entries, err := substrait.GetSubstraitExtensionsFS().ReadDir("extensions")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if lazysubstrait.Unsupported[e.Name()] {
			continue
		}
		r, err := substrait.GetSubstraitExtensionsFS().Open("extensions/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := want.Load(extensions.SubstraitDefaultURIPrefix+e.Name(), r); err != nil {
			t.Fatal(err)
		}
		_ = r.Close()
	}
	names := func(c *extensions.Collection) []string {
		var out []string
		for _, f := range c.GetAllScalarFunctions() {
			out = append(out, f.URN()+"#"+f.CompoundName())
		}
		for _, f := range c.GetAllAggregateFunctions() {
			out = append(out, f.URN()+"#"+f.CompoundName())
		}
		slices.Sort(out)
		return out
	}
	have := names(lazysubstrait.TheCollection)
	for _, n := range names(&want) {
		if _, ok := slices.BinarySearch(have, n); !ok {
			t.Errorf("after Load the collection lacks %s", n)
		}
	}
	if len(have) <= len(names(&want)) {
		t.Errorf("the collection has %d functions, substrait-go's %d: iceberg-go's own are missing", len(have), len(names(&want)))
	}
}
