package sidecar

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

// hostileValues are query values and JSON scalars a caller may send by
// mistake or in malice: signs, overflows, exponents, padding, unicode,
// control characters, and values far past any bound.
var hostileValues = []string{
	"", "-1", "-0", "+1", "2147483647", "2147483648", "-2147483649", "9223372036854775808",
	"18446744073709551616", "1e3", "0x10", "1.0", " 1", "1 ", "０", "٣", "NaN", "Inf",
	"a b", "ünï", "\x00", "\n", "\t", "%", "%zz", "&", "=", "..", "../../x", "/",
	strings.Repeat("9", 5000), strings.Repeat("é", 3000), strings.Repeat("a,", 50_000),
}

// TestSelectiveEndpointsHostileInput throws seeded random combinations of
// hostile query parameters at the selective endpoints (/v1/gaps, /v1/plan,
// /v1/committed, DELETE /v1/extents) and hostile bodies at POST /v1/gaps,
// /v1/plan and /v1/release: every answer is 200 or a 4xx, JSON, naming a
// rule; never a 5xx or a panic.
func TestSelectiveEndpointsHostileInput(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	p := newPod(t, func(o *Options) { o.MaxBodyBytes = 1 << 16 })
	if a := p.do(t, "POST", "/v1/records", "", []byte(`[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":10}]`)); a.code != 200 {
		t.Fatalf("records: %d %s", a.code, a.raw)
	}
	params := []string{"reference", "sink", "topic", "partition", "acked_end", "acked_start", "max_tasks", "max_batches", "sinks", "partitions", "x"}
	value := func() string { return hostileValues[rng.IntN(len(hostileValues))] }
	check := func(what string, a answer) {
		t.Helper()
		if a.code >= 500 || (a.code != 200 && (a.code < 400 || a.body == nil || a.body["error"] == nil)) {
			t.Fatalf("seed %d: %s: %d %.300s", seed, what, a.code, a.raw)
		}
	}
	var ok, refused int
	for i := 0; i < 150; i++ {
		q := url.Values{}
		for range 1 + rng.IntN(4) {
			k := params[rng.IntN(len(params))]
			q.Add(k, value())
		}
		raw := q.Encode()
		if rng.IntN(8) == 0 { // a raw, unencoded query
			raw = strings.ReplaceAll(raw, "%25", "%")
		}
		for _, ep := range []struct{ method, path string }{
			{"GET", "/v1/gaps"}, {"GET", "/v1/plan"}, {"GET", "/v1/committed"}, {"DELETE", "/v1/extents"},
		} {
			a := p.do(t, ep.method, ep.path+"?"+raw, "", nil)
			check(fmt.Sprintf("%s %s?%.200s", ep.method, ep.path, raw), a)
			if a.code == 200 {
				ok++
			} else {
				refused++
			}
		}
		// Bodies: arrays of objects with hostile topics and partitions,
		// some far past the body bound.
		var b strings.Builder
		b.WriteString("[")
		n := 1 + rng.IntN(3)
		if rng.IntN(10) == 0 {
			n = 5000
		}
		for j := range n {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"topic":%q,"partition":%s,"start":%s,"end":%s}`, value(), cmpOr(value(), "0"), cmpOr(value(), "0"), cmpOr(value(), "1"))
		}
		b.WriteString("]")
		body := []byte(b.String())
		for _, path := range []string{"/v1/gaps", "/v1/plan", "/v1/release"} {
			a := p.do(t, "POST", path, "", body)
			check(fmt.Sprintf("POST %s %.200s", path, body), a)
			if a.code == 200 {
				ok++
			} else {
				refused++
			}
		}
	}
	t.Logf("%d requests answered 200, %d refused with a 4xx", ok, refused)
}

func cmpOr(v, or string) string {
	if v == "" || strings.ContainsAny(v, "\x00\n\t\"\\") {
		return or
	}
	return v
}
