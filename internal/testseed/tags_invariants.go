//go:build invariants

package testseed

func init() { tags = append(tags, "invariants") }
