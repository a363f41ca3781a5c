// Command image builds covmirror's container image offline, as an OCI
// image layout in one tar file (make image: dist/covmirror-image.tar),
// with go-containerregistry and no registry or daemon:
//
//	go run ./internal/image -binary dist/covmirror-linux-amd64 -version v0.1.0 \
//	    -commit HASH -date 2026-12-01T00:00:00Z -out dist/covmirror-image.tar
//
// The image has one layer the build assembles itself, distroless-style:
// the binary as /usr/local/bin/covmirror, the shared libraries it links
// (ldd: DuckDB's C++ runtime, libc and the loader), /etc/passwd and
// /etc/group with the non-root user covmirror (65532), the host's CA
// certificates, /tmp and the state directory /var/lib/covmirror owned by
// that user. No shell, no curl: every probe and hook must be an httpGet
// or the binary itself. It runs as 65532 with ENTRYPOINT covmirror and is
// named covmirror/covmirror:VERSION.
//
// The invariant it owns: the same binary, libraries, version and date give
// the same archive, byte for byte (every time in it is -date, every file
// in name order), and the image holds everything the binary needs to run
// (image_test.go runs version, demo and serve in it with nothing else).
package main
