package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/sidecar"
)

// buildBinary builds covmirror without cgo (no DuckDB: quick to link) into
// a test directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "covmirror")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// servePod is a running `covmirror serve` process.
type servePod struct {
	cmd    *exec.Cmd
	addr   string // host:port
	socket string
	stderr *logtest.Buffer
}

func startServe(t *testing.T, bin, state string, extra ...string) *servePod {
	t.Helper()
	socket := filepath.Join(state, "api.sock")
	args := append([]string{"--state", state, "--writer", "test", "serve", "--addr", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--socket", socket, "--interval", "1h",
		"--source", "files=stored", "--source", "kafka=broker-managed"}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &servePod{cmd: cmd, socket: socket, stderr: &logtest.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := childproc.ServeAddr(stdout, 2*time.Minute)
	if err != nil {
		t.Fatalf("serve did not start: %v; stderr %s", err, p.stderr.String())
	}
	p.addr = addr
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *servePod) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v; stderr %s", err, p.stderr.String())
	}
}

func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
}

// bearer is a client that sends a token over TCP.
func bearer(token string) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// call sends one request; a write says Content-Type application/json, as
// the API requires over TCP.
func call(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeProcessRecordAPI runs a real serve process: records over TCP
// and over the socket, a checkpoint, gaps, docs/sidecar-api.md's curl lines, the
// Python client's self-test, and SIGTERM's final checkpoint.
func TestServeProcessRecordAPI(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not installed: the Python client's test needs it (apt-get install python3)")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is not installed: docs/sidecar-api.md's curl lines are tested with it (apt-get install curl)")
	}
	bin := buildBinary(t)
	state := t.TempDir()
	// A stale socket file left by a dead process: serve removes it.
	stale, err := net.Listen("unix", filepath.Join(state, "api.sock"))
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = stale.Close()
	// The token file as docs/sidecar-api.md's recipe makes it, run as written.
	tokenFile := filepath.Join(t.TempDir(), "covmirror-token")
	token := readmeToken(t, tokenFile)
	p := startServe(t, bin, state, "--token-file", tokenFile)
	if fi, err := os.Stat(p.socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v: want mode 0600", fi, err)
	}
	tcp, sock := bearer(token), unixClient(p.socket)
	if code, body := call(t, http.DefaultClient, "POST", "http://"+p.addr+"/v1/records", `[]`); code != 401 || !strings.Contains(body, `"rule":"token"`) {
		t.Fatalf("a record without the token: %d %s", code, body)
	}
	base := "http://" + p.addr
	if code, body := call(t, tcp, "POST", base+"/v1/records", `[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":100}]`); code != 200 || !strings.Contains(body, `"recorded":1`) {
		t.Fatalf("record over TCP: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", "http://covmirror/v1/records", strings.NewReader(`{"sink":"lake","topic":"orders","partition":0,"start":0,"end":60}`+"\n"))
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := sock.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("NDJSON over the socket: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, body := call(t, tcp, "POST", base+"/v1/checkpoint", ""); code != 200 || !strings.Contains(body, `"batches":160`) {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	if code, body := call(t, sock, "GET", "http://covmirror/v1/gaps?sink=lake", ""); code != 200 || strings.TrimSpace(body) != `[{"sink":"lake","topic":"orders","partition":0,"start":60,"end":100,"kind":"replay"}]` {
		t.Fatalf("gaps: %d %s", code, body)
	}
	// The coverage map is mounted: its page at the root, its data beside it,
	// and other unknown GETs stay the record API's JSON 404.
	if code, body := call(t, tcp, "GET", base+"/", ""); code != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("coverage map page: %d %.200s", code, body)
	}
	if code, body := call(t, tcp, "GET", base+"/v1/map", ""); code != 200 || !strings.Contains(body, `"lake"`) {
		t.Fatalf("coverage map data: %d %.300s", code, body)
	}
	if code, body := call(t, tcp, "GET", base+"/no-such-route", ""); code != 404 || !strings.Contains(body, `"error"`) {
		t.Fatalf("unknown route: %d %s", code, body)
	}

	// docs/sidecar-api.md's curl lines, pointed at this process: the record over
	// TCP with the token, the checkpoint over the socket.
	readme, err := os.ReadFile("../../docs/sidecar-api.md")
	if err != nil {
		t.Fatal(err)
	}
	var curlLines []string
	for l := range strings.Lines(string(readme)) {
		if strings.HasPrefix(l, "curl ") && (strings.Contains(l, "/v1/records") || strings.Contains(l, "--unix-socket")) {
			curlLines = append(curlLines, strings.TrimSpace(l))
		}
	}
	if len(curlLines) != 2 {
		t.Fatalf("docs/sidecar-api.md's curl lines for /v1/records and the socket: %q", curlLines)
	}
	var out []byte
	for i, want := range []string{`{"recorded":2}`, `"checkpoints":1`} {
		line := strings.NewReplacer("127.0.0.1:9464", p.addr, "/run/covmirror/api.sock", p.socket, "/etc/covmirror/token", tokenFile, "curl ", curl+" ").Replace(curlLines[i])
		out, err = exec.Command("sh", "-c", line).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("docs/sidecar-api.md curl line %q: %v %s", line, err, out)
		}
	}

	// The Python client's self-test, over TCP with the token and the socket.
	out, err = exec.Command(python, "../../examples/python/covmirror_client.py", base, p.socket, tokenFile).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("python client: %v\n%s\nserve's stderr: %s", err, out, p.stderr.String())
	}

	// inspect --url with the token file, as an operator reads a running pod;
	// without it, the pod's 401 is a failure.
	if out, err := exec.Command(bin, "inspect", "--url", base+"/debug/coverage", "--token-file", tokenFile).CombinedOutput(); err != nil || !strings.Contains(string(out), "destinations") || strings.Contains(string(out), token) {
		t.Fatalf("inspect --url with the token: %v %s", err, out)
	}
	if out, err := exec.Command(bin, "inspect", "--url", base+"/debug/coverage").CombinedOutput(); err == nil || !strings.Contains(string(out), "401") {
		t.Fatalf("inspect --url without the token: %v %s", err, out)
	}

	// Extents the pipeline reports are kept by the process and widen every
	// later look: a partition nothing was ever recorded for, acked [0,50),
	// is one whole hole of raw to verify.
	if code, body := call(t, tcp, "PUT", base+"/v1/extents", `[{"topic":"far","partition":3,"end":50}]`); code != 200 {
		t.Fatalf("PUT /v1/extents: %d %s", code, body)
	}
	if code, body := call(t, sock, "GET", "http://covmirror/v1/gaps?topic=far", ""); code != 200 || strings.TrimSpace(body) != `[{"sink":"raw","topic":"far","partition":3,"start":0,"end":50,"kind":"verify-reference"}]` {
		t.Fatalf("gaps over a reported extent: %d %s", code, body)
	}

	// A second serve on the same socket is refused while this one answers.
	if out, err := exec.Command(bin, "--state", t.TempDir(), "serve", "--addr", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--socket", p.socket).CombinedOutput(); err == nil || !strings.Contains(string(out), "another process answers") {
		t.Fatalf("a second serve on a live socket: %v %s", err, out)
	}

	// Recorded and not checkpointed: SIGTERM's final checkpoint carries it.
	if code, body := call(t, tcp, "POST", base+"/v1/records", `[{"sink":"search","topic":"orders","partition":0,"start":0,"end":100}]`); code != 200 {
		t.Fatalf("record: %d %s", code, body)
	}
	p.stop(t)
	if _, err := os.Stat(p.socket); !os.IsNotExist(err) {
		t.Fatalf("the socket outlived serve: %v", err)
	}
	var gaps bytes.Buffer
	gapsCmd := exec.Command(bin, "--state", state, "gaps", "--json", "--sink", "search")
	gapsCmd.Stdout = &gaps
	if err := gapsCmd.Run(); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(gaps.Bytes(), &rows); err != nil || len(rows) != 0 {
		t.Fatalf("after SIGTERM, gaps of search %s (%v): the final checkpoint did not carry its record", gaps.String(), err)
	}
}

// TestServeNeedsATokenOffLoopback: a wildcard address is refused (exit 2)
// without --token-file, and so is a token file others may read or an
// empty one; with a good token file it serves, and never prints the token.
func TestServeNeedsATokenOffLoopback(t *testing.T) {
	dir := t.TempDir()
	serve := func(extra ...string) (*logtest.Buffer, *logtest.Buffer, error) {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errOut logtest.Buffer
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, append([]string{"--state", t.TempDir(), "--writer", "test", "serve", "--addr", "0.0.0.0:0", "--metrics-listen", "127.0.0.1:0", "--interval", "1h"}, extra...), &out, &errOut)
		}()
		for deadline := time.Now().Add(time.Minute); out.String() == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			select {
			case err := <-done:
				cancel()
				return &out, &errOut, err
			default:
			}
		}
		cancel()
		err := <-done
		return &out, &errOut, err
	}
	if _, _, err := serve(); exitCode(err) != 2 || !strings.Contains(err.Error(), sidecar.ErrNotLoopback.Error()) || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("a wildcard --addr without a token: exit %d, %v", exitCode(err), err)
	}
	const token = "serve-flag-test-token-0123456789"
	for name, mode := range map[string]os.FileMode{"open": 0o644, "empty": 0o600} {
		path := filepath.Join(dir, name)
		content := token
		if name == "empty" {
			content = "\n"
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(path, mode)
		if _, _, err := serve("--token-file", path); exitCode(err) != 2 || !strings.Contains(err.Error(), sidecar.ErrTokenFile.Error()) || strings.Contains(err.Error(), token) {
			t.Errorf("token file %s: exit %d, %v", name, exitCode(err), err)
		}
	}
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COVMIRROR_TOKEN_FILE", good) // the environment's setting
	out, errOut, err := serve()
	if err != nil {
		t.Fatalf("a wildcard --addr with a token: %v; stderr %s", err, errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), token) {
		t.Fatalf("serve printed the token: %s %s", out.String(), errOut.String())
	}
	// The metrics listener takes a token of its own: the record API's, in
	// another file or the same, is a usage error.
	same := filepath.Join(dir, "same")
	if err := os.WriteFile(same, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{{"--metrics-token-file", same}, {"--metrics-token-file", good}} {
		_, _, err := serve(extra...)
		if exitCode(err) != 2 || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "metrics") {
			t.Errorf("serve %q: exit %d, %v", extra, exitCode(err), err)
		}
	}
}

// readmeToken runs docs/sidecar-api.md's token recipe, the line that makes
// /etc/covmirror/token, writing path instead, and returns the token: the
// file must be one serve takes (mode 0600, no group or other access).
func readmeToken(t *testing.T, path string) string {
	t.Helper()
	readme, err := os.ReadFile("../../docs/sidecar-api.md")
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	for l := range strings.Lines(string(readme)) {
		if strings.Contains(l, "/dev/urandom") && strings.Contains(l, "> /etc/covmirror/token") && !strings.HasPrefix(l, "`") {
			recipe = append(recipe, strings.TrimSpace(l))
		}
	}
	if len(recipe) != 1 {
		t.Fatalf("docs/sidecar-api.md's token recipe, a line making /etc/covmirror/token: %q", recipe)
	}
	line := strings.ReplaceAll(recipe[0], "/etc/covmirror/token", path)
	// The shell's umask as an operator's usually is: the recipe, not the
	// test's environment, must make the file private.
	if out, err := exec.Command("sh", "-c", "umask 022; "+line).CombinedOutput(); err != nil {
		t.Fatalf("docs/sidecar-api.md token recipe %q: %v %s", line, err, out)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("docs/sidecar-api.md's token recipe made %v (%v): want no group or other access, as serve requires", fi.Mode(), err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
