package local

import (
	"os"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/childproc"
)

var killDest = coverage.Destination{Sink: "lake", Topic: "orders"}

// begunChild records [0,100) one batch at a time, begins a checkpoint,
// records every other batch of [100,120), waits until no key is
// unpersisted, says so in the file at ready, and waits to be killed. With
// behind its records are committed by the write-behind commit (the default
// CommitDelay), else each before Record returns (CommitDelay < 0).
func begunChild(dir, ready string, behind bool) error {
	opts := Options{Dir: dir, CommitDelay: -1}
	if behind {
		opts.CommitDelay = 0
	}
	s, err := Open(opts)
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
	for {
		diag, err := s.Diagnostics(ctx)
		if err != nil {
			return err
		}
		if diag.UnpersistedKeys == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(ready, []byte(cp.Name()), 0o644); err != nil {
		return err
	}
	select {}
}

// TestKilledProcessKeepsEveryCommit: with Sync off, a SIGKILL loses
// nothing Pebble committed, whether Record committed it (CommitDelay < 0)
// or the write-behind commit did: every commit hands the WAL to the
// operating system (walsync.go). Pebble would otherwise hold the WAL's last
// block in the process, and the kill lose every record since the last
// synced write (the begin here). The begun checkpoint is resumed under its
// name.
func TestKilledProcessKeepsEveryCommit(t *testing.T) {
	for _, role := range []string{"begun", "begun-behind"} {
		t.Run(role, func(t *testing.T) {
			dir, ready := t.TempDir(), t.TempDir()+"/ready"
			child := childproc.Start(t, role, crashDirEnv+"="+dir, crashLogEnv+"="+ready)
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
			want, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 100})
			for i := range uint64(10) {
				_ = want.Add(coverage.Range{Start: 100 + 2*i, End: 101 + 2*i})
			}
			if !covered.Equal(&want) {
				t.Fatalf("after the kill the store covers %s, want %s: committed records were lost", covered.String(), want.String())
			}
			cp, err := s.BeginCheckpoint(ctx)
			if err != nil || cp == nil || !cp.Resumed || cp.Name() != string(name) || cp.Batches() != 100 {
				t.Fatalf("after the kill: %+v, %v; want %s resumed with its 100 batches", cp, err, name)
			}
		})
	}
}
