package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseVersionSaysDirty: the release script's version (make
// release's -X version, the image's tag) of a work tree with uncommitted
// changes to tracked files is not the clean commit's: the binary would
// otherwise name a tag and a commit it was not built from. It runs the
// real script in a throwaway git repository holding a copy of it.
func TestReleaseVersionSaysDirty(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	script, err := os.ReadFile(filepath.Join("..", "..", ".ci", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "VERSION=", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(filepath.Join(dir, ".ci"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string][]byte{".ci/release.sh": script, "main.go": []byte("package main\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("git", "init", "-q")
	run("git", "add", ".")
	run("git", "commit", "-qm", "one")
	run("git", "tag", "v1.2.3")
	if v := run("bash", ".ci/release.sh", "version"); v != "v1.2.3" {
		t.Fatalf("the tagged clean commit's version is %q, want %q", v, "v1.2.3")
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := run("bash", ".ci/release.sh", "version"); v != "v1.2.3-dirty" {
		t.Fatalf("with an uncommitted change the version is %q, want %q", v, "v1.2.3-dirty")
	}
	// An untracked file a package may compile counts too, as for go
	// build's vcs.modified; an ignored one does not.
	run("git", "checkout", "--", "main.go")
	for name, text := range map[string]string{"extra.go": "package main\n", ".gitignore": "dist/\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if v := run("bash", ".ci/release.sh", "version"); v != "v1.2.3-dirty" {
		t.Fatalf("with an untracked file the version is %q, want %q", v, "v1.2.3-dirty")
	}
	run("git", "add", ".")
	run("git", "commit", "-qm", "two")
	run("git", "tag", "-f", "v1.2.4")
	if err := os.MkdirAll(filepath.Join(dir, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dist", "covmirror"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := run("bash", ".ci/release.sh", "version"); v != "v1.2.4" {
		t.Fatalf("with only an ignored build output the version is %q, want %q", v, "v1.2.4")
	}
}
