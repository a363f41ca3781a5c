package redact

import (
	"os"
	"regexp"
	"testing"
)

// TestPythonTwinHasTheSameShapes: the Python client's _redact is this
// package's twin, and a shape changed here but not there would leave the
// Python client printing what the Go one redacts. Its _SHAPES and
// _OPEN_AUTHORITY are the same regular expressions, in the same order.
func TestPythonTwinHasTheSameShapes(t *testing.T) {
	src, err := os.ReadFile("../../examples/python/covmirror_client.py")
	if err != nil {
		t.Fatal(err)
	}
	compiled := regexp.MustCompile(`re\.compile\(r(?:"""(.*?)"""|'(.*?)')\)`)
	var py []string
	for _, m := range compiled.FindAllStringSubmatch(string(src), -1) {
		py = append(py, m[1]+m[2])
	}
	var want []string
	for _, sh := range shapes {
		want = append(want, sh.re.String())
	}
	want = append(want, openAuthority.String())
	if len(py) < len(want) {
		t.Fatalf("the Python client has %d regular expressions; want at least the %d shapes", len(py), len(want))
	}
	for i, w := range want {
		if py[i] != w {
			t.Errorf("the Python client's expression %d is %s; want %s", i, py[i], w)
		}
	}
}
