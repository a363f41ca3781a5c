//go:build integration

package pipelinetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"github.com/covmirror/covmirror/internal/childproc"
)

// buildCovmirror builds the covmirror binary (with cgo, so `query` runs
// on DuckDB) into a test directory.
func buildCovmirror(t *testing.T) string {
	t.Helper()
	bin := t.TempDir() + "/covmirror"
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/covmirror")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build covmirror: %v\n%s", err, out)
	}
	return bin
}

// serveProc is `covmirror serve` on one --state, started, SIGKILLed and
// restarted by the test. addr is empty while it is down: a record call
// then fails and is dropped, as a pipeline drops it (a lag).
type serveProc struct {
	bin, state string
	sync       bool       // serve --sync: a 200 is fsynced before it is sent
	mu         sync.Mutex // guards cmd
	cmd        *exec.Cmd
	addr       atomic.Pointer[string]
	stderr     logtest.Buffer
	client     *http.Client
}

func newServe(bin, state string) *serveProc {
	s := &serveProc{bin: bin, state: state, client: &http.Client{Timeout: 5 * time.Second}}
	s.addr.Store(new(string))
	return s
}

// start runs serve and waits for the line naming its address.
func (s *serveProc) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("serve is already running")
	}
	args := []string{"--state", s.state, "--writer", "pipeline", "serve",
		"--addr", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--interval", "500ms", "--source", "orders=broker-managed"}
	if s.sync {
		args = append(args, "--sync")
	}
	cmd := exec.Command(s.bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = &s.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start serve: %w", err)
	}
	addr, err := childproc.ServeAddr(stdout, 2*time.Minute)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("serve did not start: %w; stderr: %s", err, s.stderr.String())
	}
	s.cmd = cmd
	s.addr.Store(&addr)
	return nil
}

// kill SIGKILLs serve (no final checkpoint) and waits for it.
func (s *serveProc) kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	s.addr.Store(new(string))
	cmd := s.cmd
	s.cmd = nil
	if err := killProcess(cmd); err != nil {
		return fmt.Errorf("serve %w; stderr: %s", err, s.stderr.String())
	}
	return nil
}

// killProcess SIGKILLs a started process and waits for it; a kill only
// counts if the process was still running and died of it.
func killProcess(cmd *exec.Cmd) error {
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		return fmt.Errorf("ended on its own before the kill (%v)", err)
	}
	return nil
}

// stop sends SIGTERM (serve's final checkpoint runs) and requires a clean
// exit.
func (s *serveProc) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	s.addr.Store(new(string))
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	err := s.cmd.Wait()
	s.cmd = nil
	if err != nil {
		return fmt.Errorf("serve after SIGTERM: %v; stderr: %s", err, s.stderr.String())
	}
	return nil
}

// post sends a JSON body to a route of the running serve and decodes a 200
// answer into out.
func (s *serveProc) post(ctx context.Context, route string, body, out any) error {
	addr := *s.addr.Load()
	if addr == "" {
		return fmt.Errorf("serve is down")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+route, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("POST %s: reading the answer: %w", route, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %d %s", route, resp.StatusCode, got)
	}
	if err := json.Unmarshal(got, out); err != nil {
		return fmt.Errorf("POST %s: answer %q: %w", route, got, err)
	}
	return nil
}

// recordEntry is one entry of POST /v1/records.
type recordEntry struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
}

// record records entries through the record API; nil only on a 200 that
// counted every entry.
func (s *serveProc) record(ctx context.Context, entries ...recordEntry) error {
	var ans struct {
		Recorded *int `json:"recorded"`
	}
	if err := s.post(ctx, "/v1/records", entries, &ans); err != nil {
		return err
	}
	if ans.Recorded == nil || *ans.Recorded != len(entries) {
		return fmt.Errorf("POST /v1/records: recorded %v of %d entries", ans.Recorded, len(entries))
	}
	return nil
}

// checkpoint asks the running serve for a checkpoint now.
func (s *serveProc) checkpoint(ctx context.Context) error {
	var ans map[string]any
	return s.post(ctx, "/v1/checkpoint", struct{}{}, &ans)
}

// cli runs a covmirror command on serve's --state with stdin, returning
// its standard output; a non-zero exit is an error with its stderr.
func (s *serveProc) cli(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"--state", s.state}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("covmirror %s: %w; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
