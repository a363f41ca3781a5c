package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImageRuns unpacks the archive make image built (COVMIRROR_IMAGE,
// set by make image-check, which CI runs) into an empty directory and
// runs its entrypoint there under chroot as the image's user, with
// nothing else in the root: version, demo (DuckDB's queries included)
// and serve, its /readyz answering 200 on the read-only listener.
func TestImageRuns(t *testing.T) {
	archive := os.Getenv("COVMIRROR_IMAGE")
	if archive == "" {
		t.Skip("COVMIRROR_IMAGE names no image archive: make image-check runs this test")
	}
	if os.Geteuid() != 0 {
		t.Fatal("chroot needs root: run make image-check as root")
	}
	img, _ := readArchive(t, archive)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	extract(t, img, root)
	uid, gid := ids(t, cf.Config.User)
	if uid == 0 {
		t.Fatalf("the image runs as root (User %q)", cf.Config.User)
	}
	run := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, cf.Config.Entrypoint[0], append(cf.Config.Entrypoint[1:], args...)...)
		cmd.Env, cmd.Dir = cf.Config.Env, "/" // Dir is inside the root
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		return cmd
	}
	ctx := context.Background()
	out, err := run(ctx, "version").CombinedOutput()
	if want := os.Getenv("COVMIRROR_IMAGE_VERSION"); err != nil || !strings.HasPrefix(string(out), "covmirror "+want) {
		t.Fatalf("version in the image: %v\n%s\nwant covmirror %s", err, out, want)
	}
	t.Logf("version:\n%s", out)
	out, err = run(ctx, "--state", "/var/lib/covmirror/demo", "demo").CombinedOutput()
	if err != nil || strings.Contains(string(out), "built without cgo") {
		t.Fatalf("demo in the image (DuckDB's gaps query included): %v\n%s", err, out)
	}
	port, mport := freePort(t), freePort(t)
	cmd := run(ctx, "--state", "/var/lib/covmirror/serve", "--writer", "image-test", "serve", "--addr", "127.0.0.1:"+port,
		"--metrics-listen", "127.0.0.1:"+mport, "--interval", "1h")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := waitServing(ctx, "http://127.0.0.1:"+mport+"/readyz", exited); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("serve in the image: %v\n%s", err, logs.String())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("serve in the image after SIGTERM: %v\n%s", err, logs.String())
	}
}

// waitServing polls url until it answers 200, the process exits, or a
// minute passes.
func waitServing(ctx context.Context, url string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = &statusError{resp.Status}
		}
		last = err
		select {
		case err := <-exited:
			return &exitError{err}
		case <-ctx.Done():
			return last
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type statusError struct{ status string }

func (e *statusError) Error() string { return "answered " + e.status }

type exitError struct{ err error }

func (e *exitError) Error() string {
	if e.err == nil {
		return "exited before serving"
	}
	return "exited before serving: " + e.err.Error()
}

func ids(t *testing.T, user string) (uint32, uint32) {
	t.Helper()
	u, g, _ := strings.Cut(user, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("the image's User %q is not numeric uid:gid", user)
	}
	return uint32(uid), uint32(gid)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
