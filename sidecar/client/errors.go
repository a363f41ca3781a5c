package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/covmirror/covmirror/internal/redact"
)

// The sentinels every error of the package is errors.Is-able to (doc.go
// says what each means for the records).
var (
	// ErrRejected: the request was refused (a 4xx but 401, 408 and 429,
	// or by the client before sending) and nothing was recorded.
	ErrRejected = errors.New("covmirror client: request refused")
	// ErrUnauthorized: 401, the token is missing or wrong.
	ErrUnauthorized = errors.New("covmirror client: unauthorized")
	// ErrUnavailable: every attempt failed on the transport or with 408,
	// 429 or a 5xx; maybe recorded.
	ErrUnavailable = errors.New("covmirror client: record API unavailable")
	// ErrBadAnswer: the answer is not the record API's; maybe recorded.
	ErrBadAnswer = errors.New("covmirror client: not an answer of the record API")
	// ErrClosed: a call on a closed Client.
	ErrClosed = errors.New("covmirror client: closed")
	// ErrInvalidOptions: Options.Validate refused the options.
	ErrInvalidOptions = errors.New("covmirror client: invalid options")
)

// Error is an error answer of the record API, or a request the client
// refused before sending it (Status 0).
type Error struct {
	// Route is the request: "POST /v1/records".
	Route string
	// Status is the HTTP status; 0 when the client refused the request
	// before sending it, by the rule the server would have applied.
	Status int
	// Rule names the rule broken, as the server names it (partition,
	// invalid-range, token, shutting-down, ...; sidecar's apiError lists
	// them). Empty when the answer had none.
	Rule string
	// Entry is the index of the record entry at fault; -1 when none is.
	Entry int
	// Recorded, on a record request the local tier failed midway, is how
	// many leading entries the server recorded; -1 otherwise. The client
	// has retried the whole request by then (recording twice is
	// harmless).
	Recorded int
	// Message is the server's error text, as sent (redacted): Error
	// prints it quoted.
	Message string
}

// Error prints the rule and the message quoted (%q): they are a server's
// text, and a line break or a terminal's escape in them would otherwise
// forge a log line or act on the terminal that shows the error.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "covmirror client: %s: ", e.Route)
	if e.Status == 0 {
		b.WriteString("refused before sending")
	} else {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, " (rule %q", e.Rule)
		if e.Entry >= 0 {
			fmt.Fprintf(&b, ", entry %d", e.Entry)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %q", e.Message)
	return b.String()
}

// Is matches the sentinel of e's status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrUnavailable:
		return retryableStatus(e.Status)
	case ErrRejected:
		return e.Status == 0 || e.Status >= 400 && e.Status < 500 && e.Status != http.StatusUnauthorized && !retryableStatus(e.Status)
	case ErrBadAnswer:
		return e.Status >= 100 && e.Status < 400
	}
	return false
}

// retryableStatus: an answer the same request may not get again (the
// server timed out reading it, asked to slow down, or failed itself).
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 && code <= 599
}

// maxErrorBody bounds the error answer read: the server's are a few
// hundred bytes, and an error must not grow with a proxy's page.
const maxErrorBody = 64 << 10

// maxErrorText bounds the message of an answer that is not the record
// API's: its start is enough to tell what answered.
const maxErrorText = 200

// maxTransportText bounds a transport error's message (redacted first): it
// may quote what a server sent, a status line net/http could not parse.
const maxTransportText = 1024

// answerError reads an error answer: the server's {"error","rule","entry",
// "recorded"}, or, from something that is not the record API, the start of
// its body as the message. cut says body was cut at maxErrorBody. Every
// text is redacted (the token, and any credential's shape: an address that
// is not the pod may echo the request) before it is shortened, so that no
// cut leaves a piece of the token.
func answerError(route string, code int, body []byte, cut bool, token string) *Error {
	e := &Error{Route: route, Status: code, Entry: -1, Recorded: -1}
	var doc struct {
		Error    *string `json:"error"`
		Rule     string  `json:"rule"`
		Entry    *int    `json:"entry"`
		Recorded *int    `json:"recorded"`
	}
	if !cut && json.Unmarshal(body, &doc) == nil && doc.Error != nil {
		e.Message, e.Rule = redact.Text(*doc.Error, false, token), redact.Text(doc.Rule, false, token)
		if doc.Entry != nil && *doc.Entry >= 0 {
			e.Entry = *doc.Entry
		}
		if doc.Recorded != nil && *doc.Recorded >= 0 {
			e.Recorded = *doc.Recorded
		}
		return e
	}
	text := strings.TrimSpace(redact.Bounded(string(body), maxErrorText, cut, token))
	if text == "" {
		text = http.StatusText(code)
	}
	e.Message = text + " (not an answer of the record API: does the address name the pod's serve?)"
	return e
}

// exhausted wraps the last failure of a call that used every attempt.
func exhausted(route string, attempts int, last error) error {
	return fmt.Errorf("%w: %s failed %d times, the last: %w; the request may or may not have taken effect (records then lag: send them again)", ErrUnavailable, route, attempts, last)
}
