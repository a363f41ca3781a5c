package local

import (
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
)

func openTemp(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	coveragetest.Run(t, coveragetest.Harness{
		Open: func(t *testing.T) coverage.Store { return openTemp(t, Options{}) },
		Reopen: func(t *testing.T, s coverage.Store) coverage.Store {
			dir := s.(*Store).Dir()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return openTemp(t, Options{Dir: dir})
		},
	})
}

func TestConformanceSynced(t *testing.T) {
	coveragetest.Run(t, coveragetest.Harness{
		Open:           func(t *testing.T) coverage.Store { return openTemp(t, Options{Sync: true}) },
		InOrderRecords: 200,
	})
}
