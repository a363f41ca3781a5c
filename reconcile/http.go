package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/redact"
	"github.com/covmirror/covmirror/internal/wirejson"
)

// DefaultMaxBody is HTTPOptions.MaxBody's zero value.
const DefaultMaxBody = 4 << 20

// HTTPOptions configures NewHTTP. The zero value of every field is a
// documented default.
type HTTPOptions struct {
	// Client sends the requests; the checker uses a copy that follows no
	// redirect (a redirect answer is ErrBadAnswer: the service asked is the
	// one trusted). Zero value: a client of its own with no timeout beyond
	// Timeout.
	Client *http.Client
	// Timeout bounds one request, its answer read in full. Zero value:
	// DefaultTimeout.
	Timeout time.Duration
	// MaxBody bounds an answer's body in bytes; a longer one is
	// ErrBadAnswer. Zero value: DefaultMaxBody.
	MaxBody int64
	// Token is sent as Authorization: Bearer Token with every request.
	// Zero value: no Authorization header.
	Token string
}

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *HTTPOptions) EnsureDefaults() {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBody == 0 {
		o.MaxBody = DefaultMaxBody
	}
}

// Validate reports options no checker can run with.
func (o *HTTPOptions) Validate() error {
	if o.Timeout < 0 || o.MaxBody < 0 || o.MaxBody == math.MaxInt64 {
		return fmt.Errorf("reconcile: HTTP checker timeout %v and body limit %d must not be negative, nor the limit %d (zero for the defaults)", o.Timeout, o.MaxBody, int64(math.MaxInt64))
	}
	return nil
}

// HTTPChecker asks a service, one GET per range. The URL template names the
// range with {topic}, {partition}, {start} and {end} (exclusive), each
// replaced query-escaped (a topic of dots alone with its dots escaped too, so
// it is never a "." or ".." path segment), and only after the host: none may
// appear in the scheme or host. The answer is a JSON object with exactly one of
// "batch_ids" (the held ids: [1,2,5]) and "ranges" (held half-open ranges:
// [[1,3],[5,6]]), decoded strictly: no other field, no field twice (a null
// counts as given), no trailing data.
type HTTPChecker struct {
	template string
	opts     HTTPOptions
}

var placeholders = []string{"{topic}", "{partition}", "{start}", "{end}"}

// NewHTTP returns a checker on the URL template.
func NewHTTP(template string, opts HTTPOptions) (*HTTPChecker, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if u, err := url.Parse(probeTemplate(template)); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || redact.StrayAt(template) {
		return nil, fmt.Errorf("reconcile: HTTP checker URL template %s is not an http or https URL without user information", shownTemplate(template))
	}
	head := template[:strings.Index(template, "://")+3] // present: the probe has a scheme and a host
	rest := template[len(head):]
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	for _, p := range placeholders {
		if strings.Contains(head+rest, p) {
			return nil, fmt.Errorf("reconcile: HTTP checker URL template %s has %s in its scheme or host: a topic must not choose the service asked", shownTemplate(template), p)
		}
	}
	client := *opts.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	opts.Client = &client
	return &HTTPChecker{template: template, opts: opts}, nil
}

// probeTemplate is template with its placeholders replaced by values a
// URL takes, to parse it.
func probeTemplate(template string) string {
	return strings.NewReplacer(placeholders[0], "t", placeholders[1], "0", placeholders[2], "0", placeholders[3], "1").Replace(template)
}

// shownTemplate is a template for an error: quoted, redacted, and never
// echoed when it does not parse or holds user information (url.Parse's
// error would quote it whole, password included).
// Its query and fragment are not shown either: a service's key may be
// there (?code=, ?sig=), in a form no shape of internal/redact knows.
func shownTemplate(template string) string {
	if u, err := url.Parse(probeTemplate(template)); err != nil || u.User != nil || strings.Contains(template, "@") {
		return redact.URL(template)
	}
	if i := strings.IndexAny(template, "?#"); i >= 0 {
		return strconv.Quote(redact.Text(template[:i], false)) + " (its query not shown)"
	}
	return strconv.Quote(redact.Text(template, false))
}

// Held implements Checker.
func (c *HTTPChecker) Held(ctx context.Context, d coverage.Destination, ranges []coverage.Range) (*coverage.RangeSet, error) {
	held := new(coverage.RangeSet)
	for _, r := range ranges {
		got, err := c.held(ctx, d, r)
		if err != nil {
			return nil, err
		}
		held.Union(got)
	}
	return held, nil
}

type httpAnswer struct {
	BatchIDs []uint64   `json:"batch_ids"`
	Ranges   [][]uint64 `json:"ranges"`
}

var httpFields = wirejson.Fields{Names: []string{"batch_ids", "ranges"}, Numbers: []bool{false, false}, What: "batch_ids and ranges"}

func (c *HTTPChecker) held(ctx context.Context, d coverage.Destination, r coverage.Range) (*coverage.RangeSet, error) {
	esc := func(s string) string {
		if strings.Trim(s, ".") == "" {
			return strings.Repeat("%2E", len(s)) // "." and ".." are no path segment
		}
		return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
	}
	u := strings.NewReplacer(
		placeholders[0], esc(d.Topic),
		placeholders[1], strconv.FormatInt(int64(d.Partition), 10),
		placeholders[2], strconv.FormatUint(r.Start, 10),
		placeholders[3], strconv.FormatUint(r.End, 10),
	).Replace(c.template)
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("request for %v: %w", r, redact.Error(err, c.opts.Token))
	}
	req.Header.Set("Accept", "application/json")
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET for %v: %w", r, redact.Error(timedOut(ctx, err), c.opts.Token))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBody+1)) // MaxBody < MaxInt64: Validate
	if err != nil {
		return nil, fmt.Errorf("reading the answer for %v: %w", r, timedOut(ctx, err))
	}
	if resp.StatusCode/100 == 3 {
		return nil, fmt.Errorf("%w: GET for %v answered %s, a redirect to %q, which is not followed: give the template the service's own URL", ErrBadAnswer, r, redact.Status(resp.Status), redact.URL(resp.Header.Get("Location")))
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: GET for %v answered %s", ErrBadAnswer, r, redact.Status(resp.Status))
	}
	if int64(len(body)) > c.opts.MaxBody {
		return nil, fmt.Errorf("%w: the answer for %v is over %d bytes", ErrBadAnswer, r, c.opts.MaxBody)
	}
	a, err := decodeAnswer(body)
	if err != nil {
		return nil, fmt.Errorf("%w: the answer for %v: %v", ErrBadAnswer, r, err)
	}
	if a.Ranges == nil {
		return heldOf(a.BatchIDs, []coverage.Range{r})
	}
	held := new(coverage.RangeSet)
	for _, p := range a.Ranges {
		if len(p) != 2 {
			return nil, fmt.Errorf("%w: the answer for %v has a range of %d numbers, not [start, end]", ErrBadAnswer, r, len(p))
		}
		hr := coverage.Range{Start: p[0], End: p[1]}
		if err := hr.Validate(); err != nil {
			return nil, fmt.Errorf("%w: the answer for %v: %v", ErrBadAnswer, r, err)
		}
		_ = held.Add(hr) // valid: checked above
	}
	if err := within(held, []coverage.Range{r}); err != nil {
		return nil, err
	}
	return held, nil
}

func decodeAnswer(body []byte) (httpAnswer, error) {
	var a httpAnswer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return a, errors.New("data after the JSON object")
	}
	if werr := wirejson.Check(body, httpFields); werr != nil {
		return a, werr
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(body, &given); err != nil {
		return a, err
	}
	if len(given) != 1 || (a.BatchIDs == nil) == (a.Ranges == nil) {
		return a, errors.New(`want exactly one of "batch_ids" and "ranges"`)
	}
	return a, nil
}
