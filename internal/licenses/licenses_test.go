package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sbom is a CycloneDX SBOM as cyclonedx-gomod bin -licenses writes it, of
// binary bin with modules "path@version=licence" (licence empty: none
// detected; "a+b": two detected).
func sbom(bin string, mods ...string) string {
	var comps []string
	for _, m := range mods {
		pv, lic, _ := strings.Cut(m, "=")
		path, ver, _ := strings.Cut(pv, "@")
		var ls []string
		for _, l := range strings.Split(lic, "+") {
			if l != "" {
				ls = append(ls, fmt.Sprintf(`{"license":{"id":%q}}`, l))
			}
		}
		comps = append(comps, fmt.Sprintf(`{"type":"library","name":%q,"version":%q,"evidence":{"licenses":[%s]}}`, path, ver, strings.Join(ls, ",")))
	}
	return fmt.Sprintf(`{"bomFormat":"CycloneDX","specVersion":"1.6","metadata":{"component":{"name":%q},"properties":[{"name":"cdx:gomod:binary:name","value":%q}]},"components":[%s]}`,
		ownModule, bin, strings.Join(comps, ","))
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIncompatibleLicenceFails: a module under a copyleft licence that
// Apache-2.0 cannot carry (GPL, AGPL, SSPL), one with no licence found,
// and one with an allowed and a refused licence each fail the check, named
// with their binaries; the report is not written.
func TestIncompatibleLicenceFails(t *testing.T) {
	ok := []string{"example.com/fine@v1.0.0=MIT", "example.com/also@v2.0.0=Apache-2.0"}
	for _, bad := range []struct{ mod, says string }{
		{"example.com/gpl@v1.2.3=GPL-3.0-only", `licence "GPL-3.0-only" is not on the allow list`},
		{"example.com/agpl@v0.1.0=AGPL-3.0-or-later", `licence "AGPL-3.0-or-later" is not on the allow list`},
		{"example.com/sspl@v1.0.0=SSPL-1.0", `licence "SSPL-1.0" is not on the allow list`},
		{"example.com/lgpl@v1.0.0=LGPL-2.1-only", `licence "LGPL-2.1-only" is not on the allow list`},
		{"example.com/none@v1.0.0=", "no licence detected"},
		{"example.com/dual@v1.0.0=MIT+GPL-2.0-only", `licence "GPL-2.0-only"`},
	} {
		t.Run(bad.mod, func(t *testing.T) {
			dir := t.TempDir()
			a := write(t, dir, "a.json", sbom("covmirror", ok...))
			b := write(t, dir, "b.json", sbom("covmirror-lite", append([]string{bad.mod}, ok[0])...))
			report := filepath.Join(dir, "report.md")
			var out, errOut bytes.Buffer
			err := run([]string{"-write", report, a, b}, &out, &errOut)
			path, _, _ := strings.Cut(bad.mod, "@")
			if err == nil || !strings.Contains(err.Error(), bad.says) || !strings.Contains(err.Error(), path) ||
				!strings.Contains(err.Error(), "(in covmirror-lite)") || strings.Contains(err.Error(), "example.com/fine") {
				t.Fatalf("run over %s: %v; want a failure naming %s in covmirror-lite: %s", bad.mod, err, path, bad.says)
			}
			if _, serr := os.Stat(report); serr == nil {
				t.Error("the report was written despite the failed check")
			}
		})
	}
}

// TestReport: allowed licences pass, an override stands in for a module
// the detector could not classify (marked *), covmirror itself is left
// out, and the report lists each module once with every binary linking it.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.json", sbom("covmirror", "example.com/b@v1.0.0=BSD-3-Clause", "github.com/twmb/murmur3@v1.1.8=", ownModule+"@v0.1.0="))
	b := write(t, dir, "b.json", sbom("covmirror-lite", "example.com/b@v1.0.0=BSD-3-Clause", "example.com/a@v0.2.0=MPL-2.0"))
	report := filepath.Join(dir, "report.md")
	var out bytes.Buffer
	if err := run([]string{"-write", report, a, b}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(report)
	for _, line := range []string{
		"| example.com/a | v0.2.0 | MPL-2.0 | covmirror-lite |\n| example.com/b | v1.0.0 | BSD-3-Clause | covmirror, covmirror-lite |\n| github.com/twmb/murmur3 | v1.1.8 | BSD-3-Clause * | covmirror |\n",
		"3 modules: BSD-3-Clause 2, MPL-2.0 1.\n",
	} {
		if !strings.Contains(string(got), line) {
			t.Errorf("the report lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(string(got), "| "+ownModule) {
		t.Errorf("the report lists covmirror itself:\n%s", got)
	}
	// -check passes on the report just written, fails on a stale one.
	if err := run([]string{"-check", report, a, b}, &out, &out); err != nil {
		t.Errorf("-check on the current report: %v", err)
	}
	stale := write(t, dir, "stale.md", strings.Replace(string(got), "v1.1.8", "v1.1.7", 1))
	if err := run([]string{"-check", stale, a, b}, &out, &out); err == nil || !strings.Contains(err.Error(), "not current") {
		t.Errorf("-check on a stale report: %v", err)
	}
}

// TestBadInput: no SBOM is a usage error; a file that is not a CycloneDX
// SBOM is a clear error.
func TestBadInput(t *testing.T) {
	var out bytes.Buffer
	if err := run(nil, &out, &out); err == nil {
		t.Error("no SBOM: no error")
	} else if _, ok := err.(usageError); !ok {
		t.Errorf("no SBOM: %v is not a usage error", err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"spdx.json": `{"spdxVersion":"SPDX-2.3"}`, "junk.json": `{"bomFormat":`} {
		p := write(t, dir, name, content)
		if err := run([]string{p}, &out, &out); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v; want an error naming the file", name, err)
		}
	}
}
