package reconcile

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// A pieceSet numbers exactly the pieces cutting the ranges would give,
// none lost or doubled, up to 2^64-1; a sample is distinct, in order and
// of the size asked.
func TestPieceSetNumbersEveryPiece(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		base := uint64(0)
		if i%2 == 0 {
			base = math.MaxUint64 - 1000
		}
		var rs []coverage.Range
		for s := base; len(rs) < rng.IntN(4)+1; {
			s += rng.Uint64N(50)
			e := s + 1 + rng.Uint64N(100)
			if e < s || e == math.MaxUint64 {
				break
			}
			rs = append(rs, coverage.Range{Start: s, End: e})
			s = e + 1
		}
		max := 1 + rng.Uint64N(30)
		if i%5 == 0 {
			max = math.MaxUint64
		}
		ps, err := newPieceSet(rs, max)
		if err != nil {
			t.Fatal(err)
		}
		var want []coverage.Range // cut by hand
		for _, r := range rs {
			for s := r.Start; s < r.End; {
				e := min(r.End, s+min(max, r.End-s))
				want = append(want, coverage.Range{Start: s, End: e})
				s = e
			}
		}
		if ps.total() != uint64(len(want)) {
			t.Fatalf("%v by %d: %d pieces, want %d", rs, max, ps.total(), len(want))
		}
		for k, w := range want {
			if got := ps.piece(uint64(k)); got != w {
				t.Fatalf("%v by %d: piece %d is %v, want %v", rs, max, k, got, w)
			}
		}
		n := 1 + rng.IntN(len(want)+1)
		picked := ps.sample(n, rand.New(rand.NewPCG(uint64(i), 3)))
		if n >= len(want) {
			if picked != nil {
				t.Fatalf("a sample of %d of %d pieces is not all of them", n, len(want))
			}
			continue
		}
		if len(picked) != n {
			t.Fatalf("sample of %d: %v", n, picked)
		}
		for k, p := range picked {
			if p >= ps.total() || (k > 0 && picked[k-1] >= p) {
				t.Fatalf("sample %v of %d pieces", picked, ps.total())
			}
		}
	}
	if _, err := newPieceSet([]coverage.Range{{Start: 0, End: math.MaxUint64}, {Start: math.MaxUint64 - 1, End: math.MaxUint64}}, 1); err == nil {
		t.Fatal("more than 2^64-1 pieces numbered")
	}
}
