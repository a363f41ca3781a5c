package coverage_test

import (
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
)

func TestInMemoryConformance(t *testing.T) {
	coveragetest.Run(t, coveragetest.Harness{
		Open: func(t *testing.T) coverage.Store { return coverage.NewInMemory() },
	})
}

func TestInMemoryPositionsConformance(t *testing.T) {
	coveragetest.RunPositions(t, coveragetest.PositionHarness{
		Open: func(t *testing.T, sources ...coverage.Source) coverage.PositionStore {
			s, err := coverage.NewInMemoryPositions(sources...)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}
