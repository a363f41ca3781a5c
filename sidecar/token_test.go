package sidecar

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A token file is used only when no group or other may read or change it,
// it holds a header-safe token of some length, and no error quotes it.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}
	good := write("good", "  "+testToken+"\r\n", 0o600)
	if tok, err := ReadTokenFile(good); err != nil || tok != testToken {
		t.Fatalf("a good token file: %q %v", tok, err)
	}
	if tok, err := ReadTokenFile(write("ro", testToken+"\n", 0o400)); err != nil || tok != testToken {
		t.Fatalf("a read-only token file: %q %v", tok, err)
	}
	for _, c := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"world", testToken, 0o644, "mode 0644"},
		{"group", testToken, 0o640, "mode 0640"},
		{"groupw", testToken, 0o620, "mode 0620"},
		{"empty", "", 0o600, "empty"},
		{"blank", " \n\n", 0o600, "empty"},
		{"short", "abc123", 0o600, "at least 16"},
		{"inner-space", "secret-part-one secret-part-two", 0o600, "not visible ASCII"},
		{"huge", strings.Repeat("x", 5000), 0o600, "not a token"},
	} {
		_, err := ReadTokenFile(write(c.name, c.content, c.mode))
		if !errors.Is(err, ErrTokenFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrTokenFile saying %q", c.name, err, c.want)
		}
		if c.content != "" && strings.TrimSpace(c.content) != "" && strings.Contains(err.Error(), strings.Fields(c.content)[0]) {
			t.Errorf("%s: the error quotes the token: %v", c.name, err)
		}
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := ReadTokenFile(dir); !errors.Is(err, ErrTokenFile) {
		t.Errorf("a directory: %v", err)
	}
}
