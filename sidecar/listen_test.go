package sidecar

import (
	"errors"
	"io/fs"
	"net"
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

// The socket is 0600 from the moment it appears at its path, answers
// there, leaves no private directory behind, and is removed on Close.
func TestListenUnixModeAndCleanup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "api.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s is %v, want a socket of mode 0600", path, fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("the socket's directory holds %d entries, want only the socket", len(entries))
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Close the socket file is still there: %v", err)
	}
	// A second listener on the same path after a clean close works.
	ln2, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	_ = ln2.Close()
}
