package sidecar

import (
	"bytes"
	"math"
	"unicode/utf8"

	"github.com/covmirror/covmirror/coverage"
)

// decodeFast decodes the plain form of a records body in one pass with no
// allocation but the result and the names: entries whose keys are exactly
// sink, topic, partition, start and end, each once; names without escapes;
// numbers of plain digits. It reports false for anything else (and for any
// entry that would be refused), and the caller then decodes with
// encoding/json, which gives the refusal its message. Whatever it accepts,
// the full decoder accepts with the same entries (FuzzDecodeFastAgrees).
func decodeFast(body []byte, ndjson bool) ([]coverage.Entry, bool) {
	p := fastParser{b: body}
	// Sized for the body's entries, but never past what its length can
	// hold: a body of braces alone would otherwise allocate an entry (56
	// bytes) per byte before its first byte is refused.
	out := make([]coverage.Entry, 0, min(bytes.Count(body, []byte{'{'}), len(body)/len(shortestEntry)))
	p.ws()
	if ndjson {
		for p.i < len(p.b) {
			if !p.entry(&out) {
				return nil, false
			}
			p.ws()
		}
		return out, true
	}
	if !p.byte('[') {
		return nil, false
	}
	p.ws()
	if !p.byte(']') {
		for {
			if !p.entry(&out) {
				return nil, false
			}
			p.ws()
			if p.byte(']') {
				break
			}
			if !p.byte(',') {
				return nil, false
			}
			p.ws()
		}
	}
	p.ws()
	return out, p.i == len(p.b)
}

// shortestEntry is shorter than any entry the fast path accepts (it
// refuses empty names too): a bound on the entries a body can hold.
const shortestEntry = `{"sink":"","topic":"","partition":0,"start":0,"end":1}`

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *fastParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// entry parses one object and appends it if it is valid. The names reuse
// the previous entry's strings where equal: a batch usually names one
// destination many times.
func (p *fastParser) entry(out *[]coverage.Entry) bool {
	if !p.byte('{') {
		return false
	}
	var e coverage.Entry
	var seen [5]bool
	var sink, topic []byte
	for field := 0; field < 5; field++ {
		if field > 0 && !p.byte(',') {
			return false
		}
		p.ws()
		key, ok := p.plainString()
		if !ok {
			return false
		}
		k := fieldIndex(key)
		if k < 0 || seen[k] {
			return false
		}
		seen[k] = true
		p.ws()
		if !p.byte(':') {
			return false
		}
		p.ws()
		switch k {
		case 0:
			sink, ok = p.plainString()
		case 1:
			topic, ok = p.plainString()
		case 2:
			var n uint64
			n, ok = p.digits()
			ok = ok && n <= math.MaxInt32
			e.Destination.Partition = int32(n)
		case 3:
			e.Range.Start, ok = p.digits()
		case 4:
			e.Range.End, ok = p.digits()
		}
		if !ok {
			return false
		}
		p.ws()
	}
	if !p.byte('}') || !utf8.Valid(sink) || !utf8.Valid(topic) {
		return false
	}
	// Compared before converting, so that an equal name costs no
	// allocation (string(b) in a comparison allocates nothing).
	var prev coverage.Destination
	if n := len(*out); n > 0 {
		prev = (*out)[n-1].Destination
	}
	e.Destination.Sink, e.Destination.Topic = prev.Sink, prev.Topic
	if len(*out) == 0 || prev.Sink != string(sink) {
		e.Destination.Sink = string(sink)
	}
	if len(*out) == 0 || prev.Topic != string(topic) {
		e.Destination.Topic = string(topic)
	}
	if coverage.ValidateNew(e.Destination, e.Range) != nil {
		return false
	}
	*out = append(*out, e)
	return true
}

func fieldIndex(key []byte) int {
	for i, name := range recordFields.names {
		if string(key) == name {
			return i
		}
	}
	return -1
}

// plainString reads a string with no escape and no control character, and
// returns its bytes, which are then exactly its value.
func (p *fastParser) plainString() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// digits reads a JSON integer without sign, fraction or exponent that fits
// a uint64.
func (p *fastParser) digits() (uint64, bool) {
	start := p.i
	var n uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
		p.i++
	}
	switch {
	case p.i == start, p.i-start > 1 && p.b[start] == '0':
		return 0, false // no digits, or a leading zero JSON refuses
	case p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E'):
		return 0, false
	}
	return n, true
}
