package faultio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// ErrInjected is wrapped by every error this package injects.
var ErrInjected = errors.New("faultio: injected fault")

// Op is a file operation a Rule can fail.
type Op uint8

const (
	// Create is opening a file for writing (FileIO.Create, and the
	// create step of FileIO.WriteFile).
	Create Op = iota + 1
	// Write is one Write (or ReadFrom) call on a created file, and the
	// write step of FileIO.WriteFile.
	Write
	// Close is closing a created file, and the last step of WriteFile.
	Close
)

func (o Op) String() string {
	switch o {
	case Create:
		return "create"
	case Write:
		return "write"
	case Close:
		return "close"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Rule says which operations fail. The zero Match matches every path.
type Rule struct {
	Op Op
	// Match is a substring of the paths the rule applies to.
	Match string
	// Nth fails the Nth matching operation (from 1) and no other. Zero
	// fails every matching operation, unless Prob is set.
	Nth int
	// Prob, when Nth is zero and Prob is above zero, fails each matching
	// operation with this probability, drawn from the Injector's seed.
	Prob float64
	// AfterSuccess carries the operation out, then reports failure.
	AfterSuccess bool
	// Err is what the failure wraps besides ErrInjected (fs.ErrPermission,
	// say, for a warehouse the process may not write). Zero value: nothing.
	Err error
}

// PartitionMatch is the Match of one partition's data files: the path
// segment iceberg-go names a partition directory with.
func PartitionMatch(field, value string) string { return "/" + field + "=" + value + "/" }

// Event is one injected fault.
type Event struct {
	Op           Op
	Path         string
	AfterSuccess bool
}

func (e Event) String() string {
	if e.AfterSuccess {
		return fmt.Sprintf("%s %s (carried out, failure reported)", e.Op, e.Path)
	}
	return fmt.Sprintf("%s %s", e.Op, e.Path)
}

type rule struct {
	Rule
	seen int
}

// Injector decides which operations fail. Safe for concurrent use; with
// concurrent writers the order of operations, and so which fail, is
// only as deterministic as the writers.
type Injector struct {
	mu     sync.Mutex
	seed   uint64
	rng    *rand.Rand
	rules  []*rule
	events []Event
	read   map[string]int64 // bytes read through opened files, by path
}

// New returns an Injector whose random draws come from seed.
func New(seed uint64, rules ...Rule) *Injector {
	in := &Injector{seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for _, r := range rules {
		in.Add(r)
	}
	return in
}

// Seed is the seed the Injector was made with, for a failing test to print.
func (in *Injector) Seed() uint64 { return in.seed }

// Add adds a rule; its Nth counts operations from now.
func (in *Injector) Add(r Rule) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = append(in.rules, &rule{Rule: r})
}

// Clear removes every rule; the events so far are kept.
func (in *Injector) Clear() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = nil
}

// Events are the faults injected so far, in order.
func (in *Injector) Events() []Event {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Event(nil), in.events...)
}

// BytesRead is how many bytes were read, through files the wrapped IO
// opened, from paths containing match ("" matches every path): what a test
// of a reader's pruning compares.
func (in *Injector) BytesRead(match string) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	var n int64
	for path, b := range in.read {
		if strings.Contains(path, match) {
			n += b
		}
	}
	return n
}

func (in *Injector) countRead(path string, n int) {
	if in == nil || n <= 0 {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.read == nil {
		in.read = map[string]int64{}
	}
	in.read[path] += int64(n)
}

// decide reports whether op on path fails, whether after success, and the
// rule's own error.
func (in *Injector) decide(op Op, path string) (fail, after bool, cause error) {
	if in == nil {
		return false, false, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range in.rules {
		if r.Op != op || !strings.Contains(path, r.Match) {
			continue
		}
		r.seen++
		hit := false
		switch {
		case r.Nth > 0:
			hit = r.seen == r.Nth
		case r.Prob > 0:
			hit = in.rng.Float64() < r.Prob
		default:
			hit = true
		}
		if hit {
			in.events = append(in.events, Event{Op: op, Path: path, AfterSuccess: r.AfterSuccess})
			return true, r.AfterSuccess, r.Err
		}
	}
	return false, false, nil
}

func injected(op Op, path string, after bool, cause error) error {
	var err error
	if after {
		err = fmt.Errorf("%w: %s %s was carried out but reported as failed", ErrInjected, op, path)
	} else {
		err = fmt.Errorf("%w: %s %s", ErrInjected, op, path)
	}
	if cause != nil {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	return err
}
