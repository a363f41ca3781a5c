package sidecar

import (
	"fmt"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestExtentBookBoundsBytes: the book's bound counts partitions, not
// bytes. Topics of 1,000 bytes (the limit is 1,024) let a caller pin
// 100,000 of them, about 100 MB of topic names, with thirteen PUTs each
// under the 8 MiB body limit; every PUT then answers the whole book (a
// PUT widening one kept extent gets about 100 MB back), and so does every GET /v1/gaps
// and /v1/plan (a real serve reached 1.4 GB resident answering six
// concurrent GET /v1/gaps). A full book should cost about what a request
// body may, and a PUT's answer should not grow with it.
func TestExtentBookBoundsBytes(t *testing.T) {
	b := NewExtentBook(0)
	// Reports of 5,000 topics (5 MB, under one request body): a report of
	// 10,000 would be refused whole by any bound of one body, leaving the
	// book empty for the PUT below.
	const per = DefaultMaxExtents / 20
	for k := range 20 {
		es := make([]coverage.Extent, 0, per)
		for i := range per {
			es = append(es, coverage.Extent{Topic: fmt.Sprintf("t%06d", k*per+i) + strings.Repeat("x", 993), End: 1})
		}
		if err := b.Report(es); err != nil {
			break // a bound that refuses is what is wanted
		}
	}
	kept := 0
	for _, e := range b.Extents() {
		kept += len(e.Topic)
	}
	if kept > DefaultMaxBodyBytes {
		t.Errorf("the book keeps %d bytes of topic names, more than one request body (%d)", kept, DefaultMaxBodyBytes)
	}
	p := newPod(t, func(o *Options) { o.Extents = b })
	again := fmt.Sprintf(`[{"topic":%q,"partition":0,"end":2}]`, b.Extents()[0].Topic)
	a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(again))
	if len(a.raw) > DefaultMaxBodyBytes {
		t.Errorf("a PUT of one extent answered %d bytes (%d)", len(a.raw), a.code)
	}
}
