// Package logtest is for tests only: a buffer that servers, streams and
// child processes write logs and output to from their own goroutines while
// the test reads it.
//
// # The invariant
//
// What a test reads is whole writes, in order: Buffer never tears a line
// that two goroutines write at once, so a test that looks for a secret or a
// message in a log reads what was really logged.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe to write from several goroutines while a
// test reads it. The zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p whole.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
