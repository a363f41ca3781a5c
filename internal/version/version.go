package version

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
)

// Module is covmirror's module path, looked up among a program's
// dependencies when covmirror is not the main module.
const Module = "github.com/covmirror/covmirror"

// Unknown stands for a value the build did not record.
const Unknown = "unknown"

// Devel is the version of a build from a work tree that Go could not
// stamp with a module version (go test, go run outside a checkout).
const Devel = "(devel)"

// Set by a release build (make release), for example
//
//	-ldflags "-X github.com/covmirror/covmirror/internal/version.version=v0.1.0"
//
// and likewise commit (the full commit hash) and date (the commit's time,
// RFC 3339 in UTC). Empty means not set: the build information decides.
var (
	version string
	commit  string
	date    string
)

// Info is what a binary says of itself.
type Info struct {
	// Version is the semantic version (v0.1.0), a Go pseudo-version for a
	// build from a checkout between releases (v0.1.1-0.20261207…-abcdef,
	// with +dirty when the work tree had changes), or Devel.
	Version string `json:"version"`
	// Commit is the full commit hash, or Unknown.
	Commit string `json:"commit"`
	// Date is the commit's time in RFC 3339 (a release build's fixed build
	// date, so that the same commit builds the same bytes), or Unknown.
	Date string `json:"date"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"go_version"`
	// Modified: the work tree had uncommitted changes at build time.
	Modified bool `json:"modified,omitempty"`
}

var (
	once sync.Once
	info Info
)

// Get is this binary's Info, read once.
func Get() Info {
	once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		info = fromBuild(bi, version, commit, date)
	})
	return info
}

// fromBuild is Info from build information (nil when the binary has none)
// and the -X values, which win where set.
func fromBuild(bi *debug.BuildInfo, v, c, d string) Info {
	out := Info{Version: v, Commit: c, Date: d, GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			out.GoVersion = bi.GoVersion
		}
		mod := &bi.Main
		if mod.Path != Module {
			mod = nil
			for _, dep := range bi.Deps {
				if dep.Path == Module {
					mod = dep
					if dep.Replace != nil {
						mod = dep.Replace
					}
				}
			}
		}
		if mod != nil && out.Version == "" && mod.Version != Devel {
			out.Version = mod.Version
		}
		// The vcs settings describe the main module only.
		if bi.Main.Path == Module {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					if out.Commit == "" {
						out.Commit = s.Value
					}
				case "vcs.time":
					if out.Date == "" {
						out.Date = s.Value
					}
				case "vcs.modified":
					out.Modified = s.Value == "true" && c == ""
				}
			}
		}
	}
	if out.Version == "" {
		out.Version = Devel
	}
	if out.Commit == "" {
		out.Commit = Unknown
	}
	if out.Date == "" {
		out.Date = Unknown
	}
	return out
}

// String is the version in one word, as a checkpoint records its writer:
// the version, with the commit's first 12 digits after a Devel version
// when the commit is known ("(devel)+d8ad0fa12345").
func (i Info) String() string {
	if i.Version == Devel && i.Commit != Unknown {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		return i.Version + "+" + c
	}
	return i.Version
}

// Write prints i for a person: prog and the version on the first line
// (what scripts read), then the commit, the date and the Go version.
func (i Info) Write(w io.Writer, prog string) error {
	commit := i.Commit
	if i.Modified {
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "%s %s\ncommit: %s\nbuilt:  %s\ngo:     %s\n", prog, i.Version, commit, i.Date, i.GoVersion)
	return err
}

// WriteJSON prints i as one JSON object with prog as "program".
func (i Info) WriteJSON(w io.Writer, prog string) error {
	return json.NewEncoder(w).Encode(struct {
		Program string `json:"program"`
		Info
	}{prog, i})
}
