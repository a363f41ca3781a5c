// Command licenses checks the licences of the modules linked into
// covmirror's binaries and writes the third-party licence report
// (docs/third-party-licenses.md). It reads CycloneDX SBOMs that
// cyclonedx-gomod generated from the built binaries (bin mode, with
// -licenses: the licence each module's files were detected as), so what it
// checks is exactly what the binaries link (make licenses, make release).
//
//	go run ./internal/licenses [-check FILE] [-write FILE] BOM.json...
//
// Every module must carry a licence in the allow list (licenses.go):
// permissive licences and MPL-2.0, all compatible with distributing
// covmirror under Apache-2.0. A module the detector could not classify
// takes its licence from the reviewed overrides list, or fails. With
// -check the report FILE must be what this run would write (the report is
// current); with -write it is written.
//
// The invariant it owns: no module reaches a release under a licence
// nobody allowed; unknown is never allowed.
package main
