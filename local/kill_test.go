package local

import (
	"os"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/childproc"
)

var killDest = coverage.Destination{Sink: "lake", Topic: "orders"}

// begunChild records [0,100) one batch at a time with Sync off, begins a
// checkpoint, records [100,110), says so in the file at ready, and waits to
// be killed.
func begunChild(dir, ready string) error {
	s, err := Open(Options{Dir: dir, CommitDelay: -1})
	if err != nil {
		return err
	}
	for i := range uint64(100) {
		if err := s.Record(ctx, killDest, coverage.Range{Start: i, End: i + 1}); err != nil {
			return err
		}
	}
	cp, err := s.BeginCheckpoint(ctx)
	if err != nil {
		return err
	}
	for i := range uint64(10) {
		if err := s.Record(ctx, killDest, coverage.Range{Start: 100 + 2*i, End: 101 + 2*i}); err != nil {
			return err
		}
	}
	if err := os.WriteFile(ready, []byte(cp.Name()), 0o644); err != nil {
		return err
	}
	select {}
}

// TestKilledProcessKeepsWhatABeginSynced: with Sync off, a SIGKILL may lose
// the last records Pebble accepted (its WAL writer holds the tail of the
// log, up to a 32 KiB block, in the process's memory), but never anything
// written before the last synced write: BeginCheckpoint syncs, so what it
// handed out is covered after the kill and resumed under its name. What
// the kill lost is logged, not asserted: it depends on Pebble's buffering.
func TestKilledProcessKeepsWhatABeginSynced(t *testing.T) {
	dir, ready := t.TempDir(), t.TempDir()+"/ready"
	child := childproc.Start(t, "begun", crashDirEnv+"="+dir, crashLogEnv+"="+ready)
	var name []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var err error
		if name, err = os.ReadFile(ready); err == nil && len(name) > 0 {
			break
		}
		if time.Now().After(deadline) {
			child.KillAfter(t, 0, "the child never got ready")
			t.Fatalf("the child never got ready: %s", child.Output())
		}
	}
	child.KillAfter(t, 0, "kill")
	s := openTemp(t, Options{Dir: dir})
	defer s.Close()
	covered, _ := s.Covered(ctx, killDest)
	if !covered.ContainsRange(coverage.Range{Start: 0, End: 100}) {
		t.Fatalf("after the kill the store covers %s: records written before the synced begin were lost", covered.String())
	}
	cp, err := s.BeginCheckpoint(ctx)
	if err != nil || cp == nil || !cp.Resumed || cp.Name() != string(name) || cp.Batches() != 100 {
		t.Fatalf("after the kill: %+v, %v; want %s resumed with its 100 batches", cp, err, name)
	}
	t.Logf("of the 10 records after the synced begin, %d survived the kill", covered.Batches()-100)
}
