package version

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs.revision", Value: "d8ad0fa1234567890abcdef0123456789abcdef0"},
		{Key: "vcs.time", Value: "2026-12-07T07:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	own := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: Module, Version: v}, Settings: vcs}
	}
	embedder := &debug.BuildInfo{GoVersion: "go1.26.8",
		Main:     debug.Module{Path: "example.com/pipeline", Version: "v9.9.9"},
		Deps:     []*debug.Module{{Path: "example.com/other", Version: "v1.0.0"}, {Path: Module, Version: "v0.1.0"}},
		Settings: vcs} // the embedder's commit, not covmirror's
	replaced := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/pipeline"},
		Deps: []*debug.Module{{Path: Module, Version: "v0.1.0", Replace: &debug.Module{Path: "../covmirror", Version: Devel}}}}
	for _, c := range []struct {
		name    string
		bi      *debug.BuildInfo
		v, c, d string
		want    Info
		str     string
	}{
		{"go test: no stamps", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: Module, Version: Devel}}, "", "", "",
			Info{Devel, Unknown, Unknown, "go1.26.8", false}, "(devel)"},
		{"go build in a checkout", own("v0.1.1-0.20261207070000-d8ad0fa12345+dirty"), "", "", "",
			Info{"v0.1.1-0.20261207070000-d8ad0fa12345+dirty", "d8ad0fa1234567890abcdef0123456789abcdef0", "2026-12-07T07:00:00Z", "go1.26.8", true},
			"v0.1.1-0.20261207070000-d8ad0fa12345+dirty"},
		{"devel with a commit", own(Devel), "", "", "",
			Info{Devel, "d8ad0fa1234567890abcdef0123456789abcdef0", "2026-12-07T07:00:00Z", "go1.26.8", true}, "(devel)+d8ad0fa12345"},
		{"release build: -X wins", own(Devel), "v0.1.0", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T00:00:00Z",
			Info{"v0.1.0", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T00:00:00Z", "go1.26.8", false}, "v0.1.0"},
		{"embedded: covmirror's module version, not the program's commit", embedder, "", "", "",
			Info{"v0.1.0", Unknown, Unknown, "go1.26.8", false}, "v0.1.0"},
		{"embedded through a replace to a directory", replaced, "", "", "",
			Info{Devel, Unknown, Unknown, "go1.26.8", false}, "(devel)"},
		{"no build information", nil, "", "", "",
			Info{Devel, Unknown, Unknown, runtime.Version(), false}, "(devel)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := fromBuild(c.bi, c.v, c.c, c.d)
			if got != c.want {
				t.Errorf("fromBuild = %+v, want %+v", got, c.want)
			}
			if s := got.String(); s != c.str {
				t.Errorf("String() = %q, want %q", s, c.str)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	i := Info{"v0.1.0", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T00:00:00Z", "go1.26.8", true}
	var b bytes.Buffer
	if err := i.Write(&b, "covmirror"); err != nil {
		t.Fatal(err)
	}
	want := "covmirror v0.1.0\ncommit: 0123456789abcdef0123456789abcdef01234567 (modified)\nbuilt:  2026-12-01T00:00:00Z\ngo:     go1.26.8\n"
	if b.String() != want {
		t.Errorf("Write printed\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := i.WriteJSON(&b, "covmirror-lite"); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Program string `json:"program"`
		Info
	}
	dec := json.NewDecoder(strings.NewReader(b.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("decoding %q: %v", b.String(), err)
	}
	if back.Program != "covmirror-lite" || back.Info != i {
		t.Errorf("WriteJSON round trip = %+v, want program covmirror-lite and %+v", back, i)
	}
}

// TestGet: the test binary has build information with no stamps, so
// Get's version is Devel and the Go version is the running one.
func TestGet(t *testing.T) {
	i := Get()
	if i.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", i.GoVersion, runtime.Version())
	}
	if i.Version == "" || i.Commit == "" || i.Date == "" {
		t.Errorf("Get() = %+v: no field may be empty", i)
	}
}
