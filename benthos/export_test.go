package benthos

import "github.com/covmirror/covmirror/durable"

// SetTestStates makes s the gap states of every tier this package opens,
// until the returned func: the tests' tier keeps none yet.
func SetTestStates(s durable.StateStore) (restore func()) {
	old := testStates
	testStates = s
	return func() { testStates = old }
}

// WithStates is t with s as its gap states.
func WithStates(t durable.Tier, s durable.StateStore) durable.Tier { return withStates{t, s} }
