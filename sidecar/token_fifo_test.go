package sidecar

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A token file that is a FIFO (a named pipe nobody writes) is refused as
// "not a regular file" at once. ReadTokenFile opens before it checks the
// mode, and opening a FIFO for reading blocks until a writer comes, so
// `covmirror serve --token-file FIFO` hangs at start with no error. The
// bound below only stops the hang from eating the test binary's timeout;
// the answer that must come is the refusal.
func TestReadTokenFileFIFOIsRefusedNotHung(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadTokenFile(path)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTokenFile) {
			t.Fatalf("a FIFO token file: %v, want ErrTokenFile (not a regular file)", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the open so the goroutine ends.
		if f, err := openWriteNonblock(path); err == nil {
			f.Close()
		}
		t.Fatal("ReadTokenFile on a FIFO did not return: it blocks in open(2) waiting for a writer")
	}
}

func openWriteNonblock(path string) (interface{ Close() error }, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return fdCloser(fd), nil
}

type fdCloser int

func (f fdCloser) Close() error { return syscall.Close(int(f)) }
