package sidecar

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
)

// trackedReader remembers its reader's first error but EOF: a body cut
// short or timed out is the transport's failure, not the JSON's, and must
// not be blamed on the entry being read then.
type trackedReader struct {
	r   io.Reader
	err error
}

func (t *trackedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && t.err == nil {
		t.err = err
	}
	return n, err
}

// readError classifies a failed body read: too large (413), timed out or
// cut short (408).
func readError(err error) *entryError {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return bodyError(-1, err).(*entryError)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &entryError{entry: -1, rule: "timeout", err: fmt.Errorf("reading the body timed out (%w): send it faster, or smaller bodies", err)}
	}
	return &entryError{entry: -1, rule: "body-read", err: fmt.Errorf("reading the body failed (%w): the connection broke before the body ended; send it again", err)}
}

// ruleStatus is the status of a refused body.
func ruleStatus(rule string) int {
	switch rule {
	case "body-too-large":
		return http.StatusRequestEntityTooLarge
	case "timeout", "body-read":
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}
