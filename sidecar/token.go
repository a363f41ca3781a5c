package sidecar

import "github.com/covmirror/covmirror/internal/token"

// ErrTokenFile: a token file that must not be used (readable or writable
// by group or others, empty, too short, or with characters a header cannot
// carry).
var ErrTokenFile = token.ErrFile

// ReadTokenFile reads a bearer token for Options.Token from path: the
// file's content without surrounding whitespace (a trailing newline is
// usual). The file must be a regular file of mode 0600 or 0400 or
// narrower (no group or other read or write bit: the token is the API's
// access control) holding at least MinTokenLength visible ASCII
// characters. Errors never quote the content.
func ReadTokenFile(path string) (string, error) { return token.ReadFile(path) }

// checkToken reports a token a client could not send or could guess.
func checkToken(tok string) error { return token.Check(tok) }
