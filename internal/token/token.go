// Package token reads and checks the bearer tokens that guard the record
// API and the metrics: a token file other users could read or change, or a
// token short enough to guess, is refused before anything is served or
// sent with it. Errors never quote a token. It is its own package, light
// enough for covmirror-lite, which sends one from inspect --url.
package token

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// MinLength is the shortest token accepted.
const MinLength = 16

// ErrFile: a token file that must not be used (readable or writable
// by group or others, empty, too short, or with characters a header cannot
// carry).
var ErrFile = errors.New("unusable token file")

// ReadFile reads a bearer token from path: the
// file's content without surrounding whitespace (a trailing newline is
// usual). The file must be a regular file of mode 0600 or 0400 or
// narrower (no group or other read or write bit: the token is the API's
// access control) holding at least MinLength visible ASCII
// characters. Errors never quote the content.
func ReadFile(path string) (string, error) {
	// Not a regular file (a FIFO nobody writes would block open(2)
	// forever): refused before it is opened. The check after the open
	// still decides, on the file actually opened.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %q is not a regular file", ErrFile, path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		// The path quoted, never as os.PathError prints it: a line
		// break in it would forge a log line.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("reading the token file %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the token file %q: %w", path, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%w: %q is not a regular file", ErrFile, path)
	case fi.Mode().Perm()&0o066 != 0:
		return "", fmt.Errorf("%w: %q has mode %04o: group or others may read or change it; chmod 600 it", ErrFile, path, fi.Mode().Perm())
	case fi.Size() > maxFile:
		return "", fmt.Errorf("%w: %q is %d bytes, not a token (at most %d)", ErrFile, path, fi.Size(), maxFile)
	}
	return read(f, path)
}

// maxFile bounds a token file, in bytes.
const maxFile = 4096

// read is the token in r: refused past maxFile bytes read, since a file's
// size can say less than it holds (a /proc file says 0) or grow after the
// stat, and cutting it would send another token.
func read(r io.Reader, path string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return "", fmt.Errorf("reading the token file %q: %w", path, err)
	}
	if len(b) > maxFile {
		return "", fmt.Errorf("%w: %q holds more than %d bytes, not a token", ErrFile, path, maxFile)
	}
	tok := strings.TrimSpace(string(b))
	if err := Check(tok); err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrFile, path, err)
	}
	return tok, nil
}

// Check reports a token a client could not send or could guess.
func Check(tok string) error {
	if tok == "" {
		return errors.New("the token is empty: write one, e.g. `head -c 32 /dev/urandom | base64 > FILE`")
	}
	if len(tok) < MinLength {
		return fmt.Errorf("the token has %d characters: give at least %d (e.g. `head -c 32 /dev/urandom | base64`)", len(tok), MinLength)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] > '~' {
			return fmt.Errorf("the token has a character at byte %d that is not visible ASCII: an Authorization header cannot carry it", i)
		}
	}
	return nil
}
