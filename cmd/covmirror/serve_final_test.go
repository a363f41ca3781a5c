package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// TestServeAnswers200OnlyForWhatTheFinalCheckpointCarries: record requests
// still reading their bodies when SIGTERM's shutdown window ends finish
// while the final checkpoint is held on a lock of PostgreSQL's checkpoints
// table. Each must answer 503 (the final checkpoint began without them),
// never 200; and every request answered 200 is in the durable tier once
// serve has exited. Before, they were answered 200 and the durable tier
// never got them.
func TestServeAnswers200OnlyForWhatTheFinalCheckpointCarries(t *testing.T) {
	bin := buildBinary(t)
	t.Setenv("COVMIRROR_DURABLE", "postgres")
	postgresSchemaEnv(t)
	schema := os.Getenv("COVMIRROR_POSTGRES_SCHEMA")
	state := t.TempDir()
	p := startServe(t, bin, state)
	base := "http://" + p.addr
	if code, body := call(t, http.DefaultClient, "POST", base+"/v1/records", `[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":100},{"sink":"lake","topic":"orders","partition":0,"start":0,"end":1}]`); code != 200 {
		t.Fatalf("record: %d %s", code, body)
	}
	if code, body := call(t, http.DefaultClient, "POST", base+"/v1/checkpoint", ""); code != 200 {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	// Answered before SIGTERM: the final checkpoint carries it.
	if code, body := call(t, http.DefaultClient, "POST", base+"/v1/records", `[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":2}]`); code != 200 {
		t.Fatalf("record: %d %s", code, body)
	}

	// Four requests with their headers and part of their bodies: in flight
	// past the shutdown window (the read timeout is 30s).
	const held = 4
	conns := make([]net.Conn, held)
	bodies := make([]string, held)
	for i := range conns {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		bodies[i] = fmt.Sprintf(`[{"sink":"lake","topic":"orders","partition":0,"start":%d,"end":%d}]`, 10+i, 11+i)
		fmt.Fprintf(c, "POST /v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(bodies[i]), bodies[i][:10])
	}

	ctx := context.Background()
	lock, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	table := pgx.Identifier{schema, "checkpoints"}.Sanitize()
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the requests' headers are read
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The final checkpoint runs once the window is over: it waits on the
	// lock.
	watch, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var waiting int
		if err := watch.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::regclass", table).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the final checkpoint never waited on the lock; stderr %s", p.stderr.String())
		}
	}
	codes := make([]int, held)
	for i, c := range conns {
		if _, err := c.Write([]byte(bodies[i][10:])); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("request %d: no answer: %v; stderr %s", i, err, p.stderr.String())
		}
		codes[i] = resp.StatusCode
		resp.Body.Close()
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit after SIGTERM; stderr %s", p.stderr.String())
	}

	var out strings.Builder
	gapsCmd := exec.Command(bin, "--state", state, "gaps", "--json", "--sink", "lake")
	gapsCmd.Stdout, gapsCmd.Stderr = &out, &out
	if err := gapsCmd.Run(); err != nil {
		t.Fatalf("gaps: %v %s", err, out.String())
	}
	var gaps []struct{ Start, End uint64 }
	if err := json.Unmarshal([]byte(out.String()), &gaps); err != nil {
		t.Fatalf("gaps: %v %s", err, out.String())
	}
	committed := func(id uint64) bool {
		for _, g := range gaps {
			if id >= g.Start && id < g.End {
				return false
			}
		}
		return true
	}
	if !committed(1) {
		t.Fatalf("the record answered before SIGTERM is not in the durable tier: gaps %v", gaps)
	}
	for i, code := range codes {
		id := uint64(10 + i)
		if code == http.StatusOK && !committed(id) {
			t.Errorf("request %d was answered 200 after the final checkpoint began, and the durable tier lacks batch %d (gaps %v)", i, id, gaps)
		}
		if code != http.StatusServiceUnavailable {
			t.Errorf("request %d, done after the final checkpoint began, was answered %d; want 503", i, code)
		}
	}
}
