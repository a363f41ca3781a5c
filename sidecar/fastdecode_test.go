package sidecar

import (
	"bytes"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// fastSeeds are bodies of every shape the fast path takes or must refuse.
var fastSeeds = []string{
	`[]`, ` [ ] `, `null`, `[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2}]`,
	`[{"sink":"lake","topic":"orders","partition":3,"start":10,"end":20},{"sink":"lake","topic":"orders","partition":3,"start":30,"end":40}]`,
	"[ {\"end\": 9 ,\"start\":\t8, \"partition\" :2147483647,\"topic\":\"t\",\"sink\":\"s\"} ]\n",
	`[{"sink":"lake","topic":"orders","partition":2147483648,"start":1,"end":2}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":9223372036854775808}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":18446744073709551616}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":01,"end":2}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2.0}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2e0}]`,
	`[{"sink":"lake","topic":"orders","partition":-0,"start":1,"end":2}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":2,"end":2}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2,"end":3}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"END":2}]`,
	`[{"sink":"la\u006be","topic":"orders","partition":0,"start":1,"end":2}]`,
	"[{\"sink\":\"l\xffke\",\"topic\":\"orders\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[{\"sink\":\"l\x01ke\",\"topic\":\"orders\",\"partition\":0,\"start\":1,\"end\":2}]",
	`[{"sink":"","topic":"orders","partition":0,"start":1,"end":2}]`,
	`[{"sink":"lake","topic":"orders","partition":"0","start":1,"end":2}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1}]`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2}] x`,
	`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2},]`,
	"{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}\n{\"sink\":\"a\",\"topic\":\"t\",\"partition\":1,\"start\":1,\"end\":2}\n",
	"{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}{\"sink\":\"b\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}",
}

// hostileSeeds are JSON grammar corners, each one byte or rule away from
// the plain form: a BOM, NUL, a raw surrogate, an overlong or past-U+10FFFF
// sequence, DEL, U+2028 and U+FFFD raw, whitespace JSON does not have (\v,
// \f, U+00A0), digit strings past uint64, "-1", empty keys, nested values,
// NDJSON separators, trailing garbage, an empty body.
var hostileSeeds = []string{
	"\xef\xbb\xbf[{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]\x00",
	"[{\"sink\":\"\xed\xa0\x80\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[{\"sink\":\"\xc0\xaf\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[{\"sink\":\"\xf4\x90\x80\x80\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[{\"sink\":\"\xf4\x8f\xbf\xbf\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[{\"sink\":\"a\x7f\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[{\"sink\":\"\u2028\ufffd\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]",
	"[\f{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}]\v",
	"[{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":0,\"end\":2\u00a0}]",
	`[{"sink":"a","topic":"t","partition":0,"start":0,"end":99999999999999999999999999999999999999}]`,
	`[{"sink":"a","topic":"t","partition":18446744073709551615,"start":0,"end":1}]`,
	`[{"sink":"a","topic":"t","partition":0,"start":-1,"end":2}]`,
	`[{"sink":"a","topic":"t","partition":0,"start":0,"end":1.}]`,
	`[{"":"a","topic":"t","partition":0,"start":0,"end":2}]`,
	`[{"sink":"a","topic":"t","partition":0,"start":0,"end":2,"":1}]`,
	`[{"sink":["a"],"topic":"t","partition":0,"start":0,"end":{}}]`,
	`[{"sink":null,"topic":"t","partition":0,"start":0,"end":2}]`,
	`[[{"sink":"a","topic":"t","partition":0,"start":1,"end":2}]]`,
	`[{"sink":"a","topic":"t","partition":0,"start":1,"end":2}][]`,
	`[,{"sink":"a","topic":"t","partition":0,"start":1,"end":2}]`,
	"{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}\r\n\n{\"sink\":\"b\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}\r\n",
	"{\"sink\":\"a\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}\n,\n[]",
	"", " \n",
}

// FuzzDecodeFastAgrees: whatever the one-pass decoder accepts, the full
// decoder accepts with the same entries, as an array and as NDJSON. (Where
// the fast path declines, the full decoder alone decides.)
func FuzzDecodeFastAgrees(f *testing.F) {
	for _, s := range append(slices.Clone(fastSeeds), hostileSeeds...) {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, ndjson bool) {
		fast, ok := decodeFast(body, ndjson)
		if !ok {
			return
		}
		full, err := decodeRecords(bytes.NewReader(body), ndjson)
		if err != nil {
			t.Fatalf("the fast path accepted %q (ndjson %v) as %v, the full decoder refuses it: %v", body, ndjson, fast, err)
		}
		if len(full) == 0 && len(fast) == 0 {
			return
		}
		if !reflect.DeepEqual(fast, full) {
			t.Fatalf("%q (ndjson %v): fast %v, full %v", body, ndjson, fast, full)
		}
	})
}

// TestDecodeFastTakesThePlainForm: the bodies clients send (the Python
// client's, the benchmark's) take the fast path, so it is not dead code.
func TestDecodeFastTakesThePlainForm(t *testing.T) {
	for _, body := range [][]byte{benchBody(1, 7), []byte(fastSeeds[3]), []byte(fastSeeds[4]), []byte(fastSeeds[5])} {
		recs, ok := decodeFast(body, false)
		if !ok {
			t.Fatalf("the fast path declined %q", body)
		}
		full, err := decodeRecords(bytes.NewReader(body), false)
		if err != nil || !reflect.DeepEqual(recs, full) {
			t.Fatalf("%q: fast %v, full %v (%v)", body, recs, full, err)
		}
	}
	for _, body := range fastSeeds[6:22] {
		if recs, ok := decodeFast([]byte(body), false); ok {
			t.Fatalf("the fast path accepted %q as %v; the full decoder must decide it", body, recs)
		}
	}
	if recs, ok := decodeFast([]byte(fastSeeds[len(fastSeeds)-2]), true); !ok || len(recs) != 2 {
		t.Fatalf("NDJSON: %v, %v", recs, ok)
	}
}

// TestDecodeFastAllocatesForTheBodyOnly: a hostile body (8 MiB of braces,
// refused at its second byte) costs an allocation on the order of its own
// size, not an entry per byte (56 times the body, per request).
func TestDecodeFastAllocatesForTheBodyOnly(t *testing.T) {
	for _, body := range [][]byte{bytes.Repeat([]byte{'{'}, 8<<20), append([]byte(`[{"sink":"`), bytes.Repeat([]byte{'{'}, 8<<20)...)} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		recs, ok := decodeFast(body, false)
		runtime.ReadMemStats(&after)
		if ok {
			t.Fatalf("the fast path accepted %d bytes of braces as %d entries", len(body), len(recs))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*uint64(len(body)) {
			t.Fatalf("a refused body of %d bytes allocated %d bytes", len(body), alloc)
		}
	}
}

// TestDecodeFastSharesRepeatedNames: a batch naming one destination
// throughout costs the entries and one string per name, not a string per
// entry (a hundred-entry batch made 200 small allocations before).
func TestDecodeFastSharesRepeatedNames(t *testing.T) {
	body := benchBody(1, 7)
	allocs := testing.AllocsPerRun(20, func() {
		if _, ok := decodeFast(body, false); !ok {
			t.Fatal("the fast path declined the benchmark's body")
		}
	})
	if allocs > 3 { // the entries, the sink, the topic
		t.Fatalf("decoding %d entries of one destination made %.0f allocations, want at most 3", benchBatch, allocs)
	}
}

// TestDecodeBodyKeepsNoPooledBytes: the read buffer is reused by the next
// request, so the entries of one body must not share its bytes: decoding a
// second body of other names of the same lengths leaves the first intact.
func TestDecodeBodyKeepsNoPooledBytes(t *testing.T) {
	first := []byte(`[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2},{"sink":"lake","topic":"orders","partition":0,"start":3,"end":4}]`)
	second := bytes.ReplaceAll(bytes.ReplaceAll(first, []byte("lake"), []byte("pond")), []byte("orders"), []byte("refund"))
	want, err := decodeRecords(bytes.NewReader(first), false)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // a pool may drop a buffer; the same one comes back often enough
		got, err := decodeBody(bytes.NewReader(first), int64(len(first)), false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeBody(bytes.NewReader(second), int64(len(second)), false); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after decoding another body the first's entries are %v, want %v", got, want)
		}
	}
}
