package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// allowed are the SPDX licences compatible with distributing covmirror's
// binaries under Apache-2.0: permissive ones, and MPL-2.0, whose
// file-level copyleft asks only that its files' sources stay available
// (they are, in the module proxy).
var allowed = map[string]bool{
	"Apache-2.0": true, "MIT": true, "ISC": true, "0BSD": true, "Zlib": true, "Unlicense": true, "CC0-1.0": true,
	"BSD-2-Clause": true, "BSD-2-Clause-Views": true, "BSD-3-Clause": true, "BSD-Source-Code": true,
	"MPL-2.0": true,
}

// override is a reviewed licence for a module the detector could not
// classify or misclassified: the LICENSE file was read by a person.
type override struct {
	id, why string
}

// overrides are keyed by module path (every version: review again when a
// module's licence changes, which the report's diff shows).
var overrides = map[string]override{
	"github.com/rcrowley/go-metrics": {"BSD-2-Clause-Views", "two-clause BSD with the views-and-conclusions paragraph"},
	"github.com/tmthrgd/go-hex":      {"BSD-3-Clause", "three-clause BSD, portions under the Go authors' BSD-3-Clause"},
	"github.com/twmb/murmur3":        {"BSD-3-Clause", "three-clause BSD"},
	"github.com/gogo/protobuf":       {"BSD-3-Clause", "detected as 0BSD; its LICENSE is the Go protobuf three-clause BSD"},
}

// ownModule is covmirror itself, Apache-2.0 (LICENSE), not a third party.
const ownModule = "github.com/covmirror/covmirror"

// module is one module a binary links, with its licences.
type module struct {
	Path, Version string
	Licenses      []string // SPDX ids (or names when the SBOM gives no id)
	Overridden    string   // why, when the licence is a reviewed override
	Binaries      []string
}

// bom is what this command reads of a CycloneDX SBOM.
type bom struct {
	BOMFormat string `json:"bomFormat"`
	Metadata  struct {
		Component struct {
			Name       string `json:"name"`
			Properties []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"properties"`
		} `json:"component"`
		Properties []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"properties"`
	} `json:"metadata"`
	Components []struct {
		Name     string    `json:"name"`
		Version  string    `json:"version"`
		Licenses []licence `json:"licenses"`
		Evidence struct {
			Licenses []licence `json:"licenses"`
		} `json:"evidence"`
	} `json:"components"`
}

type licence struct {
	License struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"license"`
	Expression string `json:"expression"`
}

// platformSuffix is the OS and architecture make release appends.
var platformSuffix = regexp.MustCompile(`-(linux|darwin|windows)-(amd64|arm64|386|arm)$`)

// binaryName is the SBOM's binary:name property without its platform,
// else its main component.
func (b *bom) binaryName() string {
	for _, p := range b.Metadata.Properties {
		if p.Name == "cdx:gomod:binary:name" {
			return platformSuffix.ReplaceAllString(p.Value, "")
		}
	}
	return b.Metadata.Component.Name
}

// readBOM decodes one SBOM.
func readBOM(r io.Reader, name string) (*bom, error) {
	var b bom
	if err := json.NewDecoder(r).Decode(&b); err != nil {
		return nil, fmt.Errorf("reading SBOM %q: %w", name, err)
	}
	if b.BOMFormat != "CycloneDX" {
		return nil, fmt.Errorf("SBOM %q: bomFormat %q, want CycloneDX (cyclonedx-gomod bin -json)", name, b.BOMFormat)
	}
	return &b, nil
}

// merge gathers the modules of every SBOM, by path and version.
func merge(boms []*bom) []*module {
	byKey := map[string]*module{}
	for _, b := range boms {
		bin := b.binaryName()
		for _, c := range b.Components {
			if c.Name == ownModule {
				continue
			}
			key := c.Name + "@" + c.Version
			m := byKey[key]
			if m == nil {
				m = &module{Path: c.Name, Version: c.Version}
				for _, l := range slices.Concat(c.Licenses, c.Evidence.Licenses) {
					if id := cmpOr(l.License.ID, l.License.Name, l.Expression); id != "" && !slices.Contains(m.Licenses, id) {
						m.Licenses = append(m.Licenses, id)
					}
				}
				if o, ok := overrides[c.Name]; ok {
					m.Licenses, m.Overridden = []string{o.id}, o.why
				}
				byKey[key] = m
			}
			if !slices.Contains(m.Binaries, bin) {
				m.Binaries = append(m.Binaries, bin)
			}
		}
	}
	out := make([]*module, 0, len(byKey))
	for _, m := range byKey {
		sort.Strings(m.Binaries)
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Version < out[j].Version
	})
	return out
}

func cmpOr(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// check fails naming every module whose licence is unknown or not allowed.
// A module with several detected licences needs each allowed: the
// detector cannot tell a choice (OR) from a conjunction (AND).
func check(mods []*module) error {
	var errs []error
	for _, m := range mods {
		if len(m.Licenses) == 0 {
			errs = append(errs, fmt.Errorf("%q (in %s): no licence detected: read its LICENSE and add a reviewed entry to the overrides in internal/licenses/licenses.go, or drop the dependency",
				m.Path+"@"+m.Version, strings.Join(m.Binaries, ", ")))
			continue
		}
		for _, l := range m.Licenses {
			if !allowed[l] {
				errs = append(errs, fmt.Errorf("%q (in %s): licence %q is not on the allow list of licences compatible with Apache-2.0: drop or replace the dependency (adding the licence to the list needs a legal review)",
					m.Path+"@"+m.Version, strings.Join(m.Binaries, ", "), l))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d modules fail the licence check:\n%w", len(errs), len(mods), errors.Join(errs...))
	}
	return nil
}

// report is the Markdown licence report of mods.
func report(mods []*module) string {
	var b strings.Builder
	b.WriteString(`# Third-party licences

The modules linked into covmirror's release binaries (covmirror,
covmirror-lite, covmirror-benthos on linux/amd64), with the licence
detected in each module's files by cyclonedx-gomod. Generated by ` + "`make licenses`" + `
(internal/licenses) from the binaries' SBOMs; CI fails when it is not
current or a licence is not on the allow list. covmirror itself is
Apache-2.0 (LICENSE, NOTICE). A licence marked * was read by a person where
the detector could not tell (internal/licenses/licenses.go says why).

| module | version | licence | binaries |
| --- | --- | --- | --- |
`)
	counts := map[string]int{}
	for _, m := range mods {
		l := strings.Join(m.Licenses, ", ")
		if m.Overridden != "" {
			l += " *"
		}
		for _, id := range m.Licenses {
			counts[id]++
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", m.Path, m.Version, l, strings.Join(m.Binaries, ", "))
	}
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fmt.Fprintf(&b, "\n%d modules:", len(mods))
	for i, id := range ids {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %d", sep, id, counts[id])
	}
	b.WriteString(".\n")
	return b.String()
}
