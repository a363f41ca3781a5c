package sidecar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// ErrTokenFile: a token file that must not be used (readable or writable
// by group or others, empty, too short, or with characters a header cannot
// carry).
var ErrTokenFile = errors.New("sidecar: unusable token file")

// ReadTokenFile reads a bearer token for Options.Token from path: the
// file's content without surrounding whitespace (a trailing newline is
// usual). The file must be a regular file of mode 0600 or 0400 or
// narrower (no group or other read or write bit: the token is the API's
// access control) holding at least MinTokenLength visible ASCII
// characters. Errors never quote the content.
func ReadTokenFile(path string) (string, error) {
	// Not a regular file (a FIFO nobody writes would block open(2)
	// forever): refused before it is opened. The check after the open
	// still decides, on the file actually opened.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrTokenFile, path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("sidecar: reading the token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("sidecar: reading the token file %s: %w", path, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%w: %s is not a regular file", ErrTokenFile, path)
	case fi.Mode().Perm()&0o066 != 0:
		return "", fmt.Errorf("%w: %s has mode %04o: group or others may read or change it; chmod 600 %s", ErrTokenFile, path, fi.Mode().Perm(), path)
	case fi.Size() > 4096:
		return "", fmt.Errorf("%w: %s is %d bytes, not a token (at most 4096)", ErrTokenFile, path, fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("sidecar: reading the token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if err := checkToken(tok); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrTokenFile, path, err)
	}
	return tok, nil
}

// checkToken reports a token a client could not send or could guess.
func checkToken(tok string) error {
	if tok == "" {
		return errors.New("the token is empty: write one, e.g. `head -c 32 /dev/urandom | base64 > FILE`")
	}
	if len(tok) < MinTokenLength {
		return fmt.Errorf("the token has %d characters: give at least %d (e.g. `head -c 32 /dev/urandom | base64`)", len(tok), MinTokenLength)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] > '~' {
			return fmt.Errorf("the token has a character at byte %d that is not visible ASCII: an Authorization header cannot carry it", i)
		}
	}
	return nil
}
