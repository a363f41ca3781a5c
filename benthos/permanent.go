package benthos

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/redact"
	"github.com/covmirror/covmirror/sidecar/client"
)

const fieldPermanent = "permanent"

// permanentField is which of a sink's failures are permanent: recorded
// as refused, out of the replay plan until an operator reopens them.
func permanentField() *service.ConfigField {
	return service.NewObjectField(fieldPermanent,
		service.NewIntListField("status_codes").Default([]any{}).
			Description("HTTP status codes the sink answers for a batch it will never take (`http_client` says `unexpected response code (400)`), e.g. `[400, 422]`."),
		service.NewStringListField("errors").Default([]any{}).
			Description("Regular expressions (RE2) on the child's error: a failure whose error matches one is permanent, e.g. `violates check constraint`."),
		service.NewIntField("attempts").Default(0).
			Description("A batch this process saw fail this many times (any failure) is permanent; `0`: never by count. Counted per process: a replay stream run once per process counts one attempt a run."),
	).Advanced().Description("Which failures of a sink other than raw are permanent: each such batch is recorded as refused, with the error as the reason, and leaves the replay plan (still a gap, never coverage) until an operator reopens it (`covmirror reopen`) or the sink acknowledges it. Any other failure stays a gap, replayed. Not allowed with `reference: true`: raw's failures are delivered again.")
}

// permanence decides which failures are permanent.
type permanence struct {
	codes    []int
	patterns []*regexp.Regexp
	attempts int
}

func (p permanence) none() bool { return len(p.codes) == 0 && len(p.patterns) == 0 && p.attempts == 0 }

// parsePermanence reads the permanent field; a bad value is an error
// naming the field.
func parsePermanence(conf *service.ParsedConfig, reference bool) (permanence, error) {
	var p permanence
	codes, err := conf.FieldIntList(fieldPermanent, "status_codes")
	if err != nil {
		return p, err
	}
	for i, c := range codes {
		if c < 100 || c > 599 {
			return p, fmt.Errorf("covmirror: permanent.status_codes[%d]: %d is not an HTTP status code (100 to 599)", i, c)
		}
	}
	p.codes = codes
	exprs, err := conf.FieldStringList(fieldPermanent, "errors")
	if err != nil {
		return p, err
	}
	for i, e := range exprs {
		if strings.TrimSpace(e) == "" {
			return p, fmt.Errorf("covmirror: permanent.errors[%d] is empty: it would match every error; give a pattern", i)
		}
		re, err := regexp.Compile(e)
		if err != nil {
			return p, fmt.Errorf("covmirror: permanent.errors[%d] %q is not a regular expression (RE2): %w", i, e, err)
		}
		p.patterns = append(p.patterns, re)
	}
	if p.attempts, err = conf.FieldInt(fieldPermanent, "attempts"); err != nil {
		return p, err
	}
	if p.attempts < 0 {
		return p, fmt.Errorf("covmirror: permanent.attempts %d: give 0 (never by count) or a positive number", p.attempts)
	}
	if reference && !p.none() {
		return p, errors.New("covmirror: permanent with reference: true: raw's failed writes are delivered again, never refused; drop permanent from raw's output")
	}
	return p, nil
}

// statusCode finds the HTTP status http_client's error names: Benthos'
// ErrUnexpectedHTTPRes is internal, its text is what an output sees.
var statusCode = regexp.MustCompile(`unexpected response code \((\d{3})\)`)

// rule names the rule err meets, or "" when err is not permanent by its
// text.
func (p permanence) rule(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if len(p.codes) > 0 {
		for _, m := range statusCode.FindAllStringSubmatch(msg, -1) {
			if c, _ := strconv.Atoi(m[1]); slices.Contains(p.codes, c) {
				return "status code " + m[1]
			}
		}
	}
	for _, re := range p.patterns {
		if re.MatchString(msg) {
			return fmt.Sprintf("error pattern %q", re.String())
		}
	}
	return ""
}

// refusal is the reason of a refused batch: the rule and the error,
// quoted, redacted and bounded as gapstate requires.
func refusal(sink, rule string, err error) string {
	s := fmt.Sprintf("sink %q failed the batch permanently (%s): %s", sink, rule, strconv.Quote(redact.Text(err.Error(), false)))
	return redact.Bounded(s, gapstate.MaxReasonLen-len("..."), false)
}

// maxCounted bounds the failures counted for permanent.attempts: past
// it the counts start over, which only delays a refusal.
const maxCounted = 1 << 16

// failures counts each batch's failed writes in this process, for
// permanent.attempts, by where coverage goes (outputs of two pods never
// share a count).
var failures struct {
	mu sync.Mutex
	n  map[failureKey]int
}

type failureKey struct {
	where string
	d     coverage.Destination
	id    uint64
}

// failed counts one more failure of k and returns the count.
func countFailure(k failureKey) int {
	failures.mu.Lock()
	defer failures.mu.Unlock()
	if failures.n == nil || len(failures.n) >= maxCounted {
		failures.n = map[failureKey]int{}
	}
	failures.n[k]++
	return failures.n[k]
}

// forgetFailures drops the counts of batches a sink acknowledged or that
// were refused.
func forgetFailures(keys []failureKey) {
	failures.mu.Lock()
	defer failures.mu.Unlock()
	for _, k := range keys {
		delete(failures.n, k)
	}
}

// where names a destination of coverage for the failure counts.
func (d destination) where() string {
	if d.sidecar != nil {
		return "sidecar " + d.sidecar.address + d.sidecar.socket
	}
	return "pod " + d.pod.Tier.State
}

// refusedStates are the refusals of the messages keys[ids[k]], each with
// reasons[k], coalesced into ranges of one destination and one
// reason.
func refusedStates(keys []batchKey, ids []int, reasons []string) []client.StateEntry {
	type group struct {
		d      coverage.Destination
		reason string
	}
	entries := map[group][]coverage.Entry{}
	var order []group
	for k, i := range ids {
		g := group{keys[i].d, reasons[k]}
		if _, ok := entries[g]; !ok {
			order = append(order, g)
		}
		entries[g] = append(entries[g], coverage.Entry{Destination: keys[i].d, Range: coverage.Range{Start: keys[i].id, End: keys[i].id + 1}})
	}
	var out []client.StateEntry
	for _, g := range order {
		for _, e := range coalesce(entries[g]) {
			out = append(out, client.StateEntry{Destination: e.Destination, Range: e.Range, State: gapstate.Refused, Reason: g.reason})
		}
	}
	return out
}
