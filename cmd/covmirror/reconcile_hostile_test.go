package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"
)

// TestReconcileEveryRefusesASinkWithoutAChecker: --sink naming a sink with
// no checker is a usage mistake (exit 2) with --every too, found before
// the schedule starts, not a job that checks nothing every interval.
func TestReconcileEveryRefusesASinkWithoutAChecker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut strings.Builder
	err := Run(ctx, []string{"--state", t.TempDir(), "--writer", "test", "reconcile", "--checker", "s.kind=http", "--checker", "s.url=http://127.0.0.1:1/x",
		"--sink", "nosuch", "--every", "1h"}, &out, &errOut)
	if ctx.Err() != nil || exitCode(err) != 2 || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Fatalf("exit %d (%v), context %v\n%s", exitCode(err), err, ctx.Err(), errOut.String())
	}
}

// TestReconcileEveryExportsEverySinksFailuresFromTheStart: without --sink,
// every sink with a checker has its failure counter from the first scrape,
// so a sink failing from the job's first run shows an increase (and
// CovmirrorReconcileFailing fires) at once, not one interval later.
func TestReconcileEveryExportsEverySinksFailuresFromTheStart(t *testing.T) {
	e := newReconcileEnv(t)
	if _, errOut, err := e.run(t, "record", "--sink", "h", "--topic", "t", "--partition", "0", "--range", "0:10"); err != nil {
		t.Fatalf("record: %v\n%s", err, errOut)
	}
	if _, errOut, err := e.run(t, "checkpoint"); err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, errOut)
	}
	release := make(chan struct{})
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer sink.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	var out logtest.Buffer
	done := make(chan error)
	go func() {
		done <- Run(ctx, append(slices.Clone(e.global), "reconcile", "--checker", "h.kind=http", "--checker", "h.url="+sink.URL+"/{topic}/{partition}/{start}/{end}",
			"--every", "1h", "--metrics-addr", "127.0.0.1:0"), &out, io.Discard)
	}()
	addr := regexp.MustCompile(`serving http://(\S+)/metrics`)
	var body string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && body == ""; time.Sleep(20 * time.Millisecond) {
		m := addr.FindStringSubmatch(out.String())
		if m == nil {
			continue
		}
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("scheduled reconcile after cancel: %v", err)
	}
	if !strings.Contains(body, `covmirror_reconcile_failures_total{sink="h"} 0`+"\n") {
		t.Fatalf("the first scrape, with the first check under way, has no failure counter of sink h:\n%s", body)
	}
}

// TestReconcileTasksRefusesAReferenceWithoutCoverage: --reference naming a
// sink with no committed coverage (a misspelt raw) would clip every replay
// to nothing and print an empty task list: the recovery worker would get
// nothing while the rows stay claimed-absent. It is an error naming it.
func TestReconcileTasksRefusesAReferenceWithoutCoverage(t *testing.T) {
	e := newReconcileEnv(t)
	e.write(t, 0, 0, 10)
	if _, errOut, err := e.run(t, "checkpoint"); err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, errOut)
	}
	e.exec(t, "DELETE FROM "+e.table+" WHERE batch_id = 4")
	out, _, err := e.run(t, "reconcile", "--tasks", "--reference", "rwa")
	if err == nil || !strings.Contains(err.Error(), `"rwa"`) {
		t.Fatalf("exit %d (%v), tasks %s", exitCode(err), err, out)
	}
	if out, _, err := e.run(t, "reconcile", "--tasks"); exitCode(err) != 1 || !strings.Contains(out, `"start":4`) {
		t.Fatalf("--tasks from raw: exit %d (%v), %s", exitCode(err), err, out)
	}
}

// TestReconcileRateFlag: --max-checks-per-second 0 is its default, as the
// refusal of a negative one says; the refusal names the flag's value once.
func TestReconcileRateFlag(t *testing.T) {
	base := []string{"reconcile", "--checker", "s.kind=http", "--checker", "s.url=http://127.0.0.1:1/x"}
	_, _, err := runCLI(t, t.TempDir(), append(base, "--max-checks-per-second", "-1")...)
	if exitCode(err) != 2 || strings.Contains(err.Error(), "reconcile: reconcile:") {
		t.Fatalf("-1: exit %d, %v", exitCode(err), err)
	}
	_, _, err = runCLI(t, t.TempDir(), append(base, "--max-checks-per-second", "0")...)
	if exitCode(err) == 2 {
		t.Fatalf("0, the documented default: exit 2, %v", err)
	}
}
