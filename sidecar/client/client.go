package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/backoff"
	"github.com/covmirror/covmirror/internal/redact"
)

// Client calls one pod's record API. Safe for concurrent use.
type Client struct {
	opts   Options
	base   string // the server's root URL, no trailing slash
	http   *http.Client
	owned  bool // http is the Client's own: Close closes its connections
	closed atomic.Bool

	// The retry waits' bounds: MinRetryWait and MaxRetryWait, shortened
	// by this package's tests.
	minWait, maxWait time.Duration
}

// New returns a Client; it sends nothing until the first call.
func New(opts Options) (*Client, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	base, _ := opts.baseURL() // validated
	c := &Client{opts: opts, base: base, minWait: MinRetryWait, maxWait: MaxRetryWait}
	var hc http.Client
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	} else {
		c.owned = true
		hc.Timeout = DefaultAttemptTimeout
	}
	if opts.Socket != "" {
		var tr *http.Transport
		if t, ok := hc.Transport.(*http.Transport); ok {
			tr = t.Clone()
		} else {
			tr = http.DefaultTransport.(*http.Transport).Clone()
		}
		tr.Proxy = nil
		path := opts.Socket
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}
		hc.Transport = tr
		c.owned = true
	} else if c.owned {
		hc.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	// A redirect is no answer of the API (ServeMux redirects a path it
	// would clean): following it would address another resource, and
	// carry the token there.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http = &hc
	return c, nil
}

// Close closes the Client's idle connections (those of its own transport,
// never a given HTTPClient's); later calls return ErrClosed. Calls in
// flight finish.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.owned {
		c.http.CloseIdleConnections()
	}
	return nil
}

// wireEntry is a record entry as the API takes it.
type wireEntry struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
}

// Record records entries, each a range of batches its sink has durably
// acknowledged, in the pod's local tier: all or nothing with respect to
// validation (an invalid entry is an *Error naming it and its rule, and
// nothing is recorded). nil means the local tier accepted every entry; any
// error means maybe recorded, maybe not (a lag: send them again, or leave
// them to recovery). No entries is nil without a request.
//
// Keep a request under the server's body limit (serve's --max-body, 8 MiB
// by default: about 80,000 entries); a larger one is refused with 413,
// rule body-too-large. Send a hundred entries or more per call: each
// request is recorded under one lock and one write.
func (c *Client) Record(ctx context.Context, entries []coverage.Entry) error {
	const route = "POST /v1/records"
	if c.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, route)
	}
	if len(entries) == 0 {
		return nil
	}
	wire := make([]wireEntry, len(entries))
	for i, e := range entries {
		d := e.Destination
		// encoding/json would replace the bytes of invalid UTF-8, and
		// the server record another name than the caller's.
		for _, name := range [...]struct{ field, v string }{{"sink", d.Sink}, {"topic", d.Topic}} {
			if !utf8.ValidString(name.v) {
				return &Error{Route: route, Rule: "invalid-utf8", Entry: i, Recorded: -1,
					Message: fmt.Sprintf("entry %d: the %s name is not valid UTF-8; nothing was sent or recorded", i, name.field)}
			}
			// The server's rule, checked before sending: a control
			// character would otherwise cost a round trip to be refused.
			if err := coverage.ValidName(name.field, name.v); err != nil {
				return &Error{Route: route, Rule: "invalid-destination", Entry: i, Recorded: -1,
					Message: fmt.Sprintf("entry %d: %v; nothing was sent or recorded", i, err)}
			}
		}
		wire[i] = wireEntry{Sink: d.Sink, Topic: d.Topic, Partition: d.Partition, Start: e.Range.Start, End: e.Range.End}
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return fmt.Errorf("covmirror client: %s: encoding the entries: %w", route, err)
	}
	var ans struct {
		Recorded *int `json:"recorded"`
	}
	if err := c.call(ctx, http.MethodPost, "/v1/records", nil, body, &ans, nil); err != nil {
		return err
	}
	if ans.Recorded == nil || *ans.Recorded != len(entries) {
		got := "none"
		if ans.Recorded != nil {
			got = fmt.Sprint(*ans.Recorded)
		}
		return &Error{Route: route, Status: http.StatusOK, Entry: -1, Recorded: -1,
			Message: fmt.Sprintf("the answer says %s recorded of %d entries sent: not the record API's answer; treat them as not recorded", got, len(entries))}
	}
	return nil
}

// call sends one request until it is answered with success, refused, or
// out of attempts or context, and decodes a 2xx answer into out (nil:
// ignored). body nil sends none; every write says Content-Type
// application/json, as the server requires of a write over TCP. header,
// when set, receives the successful answer's headers.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, body []byte, out any, header *http.Header) error {
	route := method + " " + path
	if c.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, route)
	}
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, method, route, target, body, out, header)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("covmirror client: %s: %w at attempt %d (%v); the request may or may not have taken effect (records then lag: send them again)", route, ctx.Err(), attempt, err)
		}
		var ae *Error
		if errors.As(err, &ae) && !retryableStatus(ae.Status) {
			return err // refused, unauthorized or not the API: again would be the same
		}
		if attempt >= c.opts.MaxAttempts {
			return exhausted(route, attempt, err)
		}
		wait := backoff.FullJitter(attempt, c.minWait, c.maxWait)
		c.opts.Logger.Warn("covmirror client: retrying", "route", route, "attempt", attempt, "max_attempts", c.opts.MaxAttempts, "wait", wait, "err", err)
		if serr := backoff.Sleep(ctx, wait); serr != nil {
			return fmt.Errorf("covmirror client: %s: %w waiting to retry after attempt %d, which failed: %v; the request may or may not have taken effect (records then lag: send them again)", route, serr, attempt, err)
		}
	}
}

// attempt sends the request once. A transport error is returned as it is
// (retried); an answer but 2xx is an *Error.
func (c *Client) attempt(ctx context.Context, method, route, target string, body []byte, out any, header *http.Header) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body) // NewRequest sets GetBody from it
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return &Error{Route: route, Entry: -1, Recorded: -1, Message: fmt.Sprintf("building the request: %v", err)}
	}
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.opts.Token != "" && c.opts.Socket == "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("covmirror client: %s: %w", route, redact.BoundedError(err, maxTransportText, c.opts.Token))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
		if err != nil && retryableStatus(resp.StatusCode) {
			return fmt.Errorf("covmirror client: %s: HTTP %d, reading its answer: %w", route, resp.StatusCode, redact.BoundedError(err, maxTransportText, c.opts.Token))
		}
		cut := len(data) > maxErrorBody
		return answerError(route, resp.StatusCode, data[:min(len(data), maxErrorBody)], cut, c.opts.Token)
	}
	// The answer is read whole, within its bound, before it is decoded: a
	// body past the bound is no answer of the record API, and reading it
	// again on a retry would only cost as much again.
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxAnswer+1))
	if err != nil {
		// The body broke off: the answer was lost, the request may have
		// taken effect; again is harmless.
		return fmt.Errorf("covmirror client: %s: HTTP %d, reading its answer: %w", route, resp.StatusCode, redact.BoundedError(err, maxTransportText, c.opts.Token))
	}
	if int64(len(data)) > c.opts.MaxAnswer {
		return &Error{Route: route, Status: resp.StatusCode, Entry: -1, Recorded: -1,
			Message: fmt.Sprintf("the answer is over %d bytes, Options.MaxAnswer: not an answer of the record API, or raise MaxAnswer (a plan or committed rows of very many partitions; narrow the query by sink, topic or partition instead)", c.opts.MaxAnswer)}
	}
	if out == nil {
		out = new(json.RawMessage)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &Error{Route: route, Status: resp.StatusCode, Entry: -1, Recorded: -1,
			Message: fmt.Sprintf("the answer is not the record API's JSON (%s)", redact.Bounded(err.Error(), maxErrorText, false, c.opts.Token))}
	}
	if header != nil {
		*header = resp.Header
	}
	return nil
}
