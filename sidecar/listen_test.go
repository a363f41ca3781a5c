package sidecar

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListenTCPRefusesNonLoopback(t *testing.T) {
	if _, err := ListenTCP("0.0.0.0:0", false, nil); !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("a wildcard address without consent: %v", err)
	}
	ln, err := ListenTCP("127.0.0.1:0", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
}

func TestListenUnixNeverRemovesAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a regular file at the socket path: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Fatal("the file was touched")
	}
}
