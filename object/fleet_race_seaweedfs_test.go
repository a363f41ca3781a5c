//go:build integration

package object

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/testseed"
)

// TestSeaweedFSFleetRace is TestFleetRaceManyWritersTwoFolders on a real
// S3 store: 24 writers, two folders, selective readers, each process its
// own client whose PUTs get seeded HTTP faults (refused, failed before the
// store saw them, or applied with the answer lost), and whose calls are
// delayed and its deletes failed before or after applying.
func TestSeaweedFSFleetRace(t *testing.T) {
	seed := testseed.Seed(t)
	endpoint := seaweedBucket(t, "fleet")
	gh := &ghosts{}
	open := func(t *testing.T, i int, rng *rand.Rand, p float64) Blobs {
		if i == 0 {
			return openS3(t, endpoint, "fleet", "race/", nil)
		}
		inner := openS3(t, endpoint, "fleet", "race/", newFaultTransport(seeded(rng.Uint64(), p/2)))
		slow := &slowBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(rng.Uint64(), 2)), p: 0.05, max: 2 * time.Millisecond}
		return &hostileBlobs{flakyBlobs: &flakyBlobs{Blobs: slow, rng: rng, p: p / 2, counts: map[string]int{}}, ghosts: gh}
	}
	raceFleet(t, seed, fleetRace{writers: 24, per: 6, open: open, landed: true})
}
