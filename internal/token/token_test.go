package token

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// TestReadFileQuotesThePath: a path holding a line break or a terminal's
// escape is printed quoted in every refusal, the open's own included.
func TestReadFileQuotesThePath(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "tok\nen\x1b[2J")
	for _, c := range []struct {
		what    string
		content string
		mode    os.FileMode
	}{{"open to others", "abcdefghijklmnopqrstuvwxyz", 0o644}, {"empty", "", 0o600}, {"short", "abc", 0o600}, {"missing", "", 0}} {
		_ = os.Remove(name)
		if c.mode != 0 {
			if err := os.WriteFile(name, []byte(c.content), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(name, c.mode); err != nil {
				t.Fatal(err)
			}
		}
		_, err := ReadFile(name)
		if err == nil {
			t.Fatalf("%s: accepted", c.what)
		}
		if i := strings.IndexFunc(err.Error(), func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
			t.Errorf("%s: the path is printed as itself: %s", c.what, err)
		}
	}
}

// TestReadFileRefusesWhatIsNoTokenFile: a FIFO is refused at once, and
// what reads past 4096 bytes whatever its size says (a /proc file says 0)
// is refused, not cut to another token.
func TestReadFileRefusesWhatIsNoTokenFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrFile) {
			t.Errorf("FIFO: %v; want ErrFile", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile waited on a FIFO")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { _, _ = w.WriteString(strings.Repeat("t", 5000)); w.Close() }()
	if _, err := read(r, "pipe"); !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "4096") || strings.Contains(err.Error(), "tttttttt") {
		t.Errorf("5000 bytes read: %v; want ErrFile naming the 4096-byte bound", err)
	}
}
