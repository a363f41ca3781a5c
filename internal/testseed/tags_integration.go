//go:build integration

package testseed

func init() { tags = append(tags, "integration") }
