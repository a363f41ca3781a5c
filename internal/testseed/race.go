//go:build race

package testseed

func init() { race = true }
