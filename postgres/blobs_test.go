package postgres

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/covmirror/covmirror/object"
)

// TestBlobsBasics: the conditional writes, reads, listing and deletes
// object.Blobs promises, on the blobs table.
func TestBlobsBasics(t *testing.T) {
	b := openTier(t, freshSchema(t)).Blobs()
	k := "t/sink-a"
	if _, _, err := b.Get(ctx, k); !errors.Is(err, object.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	for _, v := range []string{"12345", `"feedface"`} {
		if _, err := b.Put(ctx, k, []byte("one"), v); !errors.Is(err, object.ErrPrecondition) {
			t.Fatalf("If-Match %s on a missing key: %v, want ErrPrecondition", v, err)
		}
	}
	v1, err := b.Put(ctx, k, []byte("one"), "")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := b.Put(ctx, k, []byte("again"), ""); !errors.Is(err, object.ErrPrecondition) {
		t.Fatalf("create of an existing key: %v, want ErrPrecondition", err)
	}
	if data, v, err := b.Get(ctx, k); err != nil || v != v1 || string(data) != "one" {
		t.Fatalf("Get after create = %q, %s, %v; want \"one\", %s", data, v, err, v1)
	}
	v2, err := b.Put(ctx, k, []byte("two"), v1)
	if err != nil || v2 == v1 {
		t.Fatalf("Put If-Match current = %s, %v; want a new version", v2, err)
	}
	if _, err := b.Put(ctx, k, []byte("three"), v1); !errors.Is(err, object.ErrPrecondition) {
		t.Fatalf("Put If-Match stale: %v, want ErrPrecondition", err)
	}
	if data, v, err := b.Get(ctx, k); err != nil || v != v2 || string(data) != "two" {
		t.Fatalf("Get after the refused write = %q, %s, %v; want \"two\", %s", data, v, err, v2)
	}
	if err := b.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, k); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if _, _, err := b.Get(ctx, k); !errors.Is(err, object.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	// Created again, the key never takes back a version a stale If-Match
	// holds.
	v3, err := b.Put(ctx, k, []byte("four"), "")
	if err != nil || v3 == v1 || v3 == v2 {
		t.Fatalf("create after delete = %s, %v; want a version neither %s nor %s", v3, err, v1, v2)
	}
	if _, err := b.Put(ctx, k, []byte("five"), v2); !errors.Is(err, object.ErrPrecondition) {
		t.Fatalf("Put If-Match of the deleted object's version: %v, want ErrPrecondition", err)
	}
	if _, err := b.Put(ctx, "bad\x00key", []byte("x"), ""); err == nil || errors.Is(err, object.ErrPrecondition) {
		t.Fatalf("Put of a key with a NUL: %v, want a clear error", err)
	}
	if data, v, err := b.Get(ctx, k+"/empty"); err == nil {
		t.Fatalf("Get of a missing key = %q, %s", data, v)
	}
	if _, err := b.Put(ctx, k+"/empty", nil, ""); err != nil {
		t.Fatalf("create of an empty object: %v", err)
	}
	if data, _, err := b.Get(ctx, k+"/empty"); err != nil || len(data) != 0 {
		t.Fatalf("Get of an empty object = %q, %v", data, err)
	}
}

// TestBlobsList: List of a prefix is exactly the keys beginning with it,
// in byte order, whatever the prefix holds: LIKE's '%' and '_', a
// backslash, characters of several bytes, the last code point (which has
// no successor). The reference is a sorted slice and strings.HasPrefix.
func TestBlobsList(t *testing.T) {
	b := openTier(t, freshSchema(t)).Blobs()
	keys := []string{"a", "a%", "a%b", "a_", "a_b", "ab", "a\\", "a\\b", "aa", "a%%", "b", "", "é", "éa", "ê",
		"a\U0010FFFF", "a\U0010FFFFz", "a\U0010FFFF\U0010FFFF", "a\uD7FF", "a\uE000", "ą", "Z", "deltas/x", "deltas0", "deltas/"}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if _, err := b.Put(ctx, k, []byte(k), ""); err != nil {
			t.Fatalf("create %q: %v", k, err)
		}
	}
	stored := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "" })
	slices.Sort(stored) // Go compares strings bytewise
	for _, prefix := range append(keys, "a\U0010FFFF\U0010FFFF\U0010FFFF", "%", "_", "\\", "deltas/") {
		got, err := b.List(ctx, prefix)
		if err != nil {
			t.Fatalf("List %q: %v", prefix, err)
		}
		var want []string
		for _, k := range stored {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("List %q = %q, want %q", prefix, got, want)
		}
	}
	if got, err := b.List(ctx, "a\x00"); err != nil || len(got) != 0 {
		t.Fatalf("List of a prefix with a NUL = %q, %v; want nothing", got, err)
	}
}

// TestSuccessor: every string beginning with the prefix is below its
// successor, and the successor does not begin with it.
func TestSuccessor(t *testing.T) {
	for _, p := range []string{"a", "ab", "a%", "é", "a\uD7FF", "a\U0010FFFF", "\U0010FFFF", "\U0010FFFF\U0010FFFF", "deltas/"} {
		s, ok := successor(p)
		if !ok {
			if strings.Trim(p, "\U0010FFFF") != "" {
				t.Fatalf("successor(%q): none", p)
			}
			continue
		}
		if !utf8.ValidString(s) || strings.HasPrefix(s, p) || s <= p || p+"\U0010FFFF\U0010FFFF" >= s {
			t.Fatalf("successor(%q) = %q", p, s)
		}
	}
}

// TestBlobsCheckStore: the race of conditional writes the object tier
// runs on an S3 store before writing (object.CheckStore) passes: of many
// writes of one version, or creates of one key, exactly one wins.
func TestBlobsCheckStore(t *testing.T) {
	rep, err := object.CheckStore(ctx, openTier(t, freshSchema(t)).Blobs(), 16)
	if err != nil || !rep.OK() {
		t.Fatalf("check-store on the blobs table: %v\n%s", err, rep)
	}
	t.Log(rep.String())
}
