#!/usr/bin/env bash
# Release builds: make release, make release-check, make licenses and make
# image call this (docs/release.md). Every binary is built -trimpath, with
# no VCS stamp and a fixed build date (the commit's time), so one commit
# gives the same bytes wherever it is built.
#
#   .ci/release.sh build OUT [PLATFORM...]   binaries into OUT (default: every platform)
#   .ci/release.sh sbom OUT                  an SBOM beside each binary in OUT, checked against go version -m
#   .ci/release.sh sums OUT                  OUT/SHA256SUMS
#   .ci/release.sh check                     build linux/amd64 twice from two copies of HEAD; same checksums
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
CYCLONEDX=${CYCLONEDX:-github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0}
if [ -z "${VERSION:-}" ]; then
  VERSION=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || echo v0.0.0-dev)
  # Uncommitted changes (as for go build's vcs.modified, untracked files
  # too: a package may compile them) are not the commit the binary names:
  # say so in the version (-dirty, not +dirty: it is the image's tag too).
  if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
    VERSION=$VERSION-dirty
  fi
fi
COMMIT=${COMMIT:-$(git rev-parse HEAD)}
DATE=${DATE:-$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)}
# The copies check builds from have no .git: they take these from here.
export VERSION COMMIT DATE
# covmirror links DuckDB (cgo), so it is built for this machine's
# platform only; the other two are pure Go and cross-compile.
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
VPKG=github.com/covmirror/covmirror/internal/version
LDFLAGS="-s -w -buildid= -X $VPKG.version=$VERSION -X $VPKG.commit=$COMMIT -X $VPKG.date=$DATE"

build() {
  local out=$1; shift
  local platforms=${*:-$PLATFORMS}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  for p in $platforms; do
    local os=${p%/*} arch=${p#*/}
    if [ "$p" = "$($GO env GOOS)/$($GO env GOARCH)" ]; then
      CGO_ENABLED=1 GOOS=$os GOARCH=$arch $GO build -trimpath -buildvcs=false -ldflags "$LDFLAGS" \
        -o "$out/covmirror-$os-$arch" ./cmd/covmirror
    fi
    for cmd in covmirror-lite covmirror-benthos; do
      CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -buildvcs=false -ldflags "$LDFLAGS" \
        -o "$out/$cmd-$os-$arch" ./cmd/$cmd
    done
  done
}

sbom() {
  local out=$1
  for bin in "$out"/covmirror*-*-*; do
    case $bin in *.cdx.json) continue ;; esac
    $GO run "$CYCLONEDX" bin -json -licenses -noserial -notimestamp -version "$VERSION" \
      -output "$bin.cdx.json" "$bin" 2>"$bin.cdx.log" || { cat "$bin.cdx.log" >&2; exit 1; }
    rm -f "$bin.cdx.log"
    # The SBOM lists every module the binary holds: the same set as go version -m.
    diff <($GO version -m "$bin" | awk '$1 == "dep" {print $2 "@" $3}' | LC_ALL=C sort) \
      <($GO run ./internal/licenses -list "$bin.cdx.json" | LC_ALL=C sort) >&2 ||
      { echo "the SBOM of $bin does not list the modules go version -m shows" >&2; exit 1; }
  done
}

sums() {
  (cd "$1" && rm -f SHA256SUMS && sha256sum -- * > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
}

check() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for copy in a b; do
    # Two copies of the commit at two paths: -trimpath must hide the path.
    mkdir -p "$tmp/src-$copy" && git archive HEAD | tar -x -C "$tmp/src-$copy"
    (cd "$tmp/src-$copy" && bash .ci/release.sh build "$tmp/out-$copy" "$($GO env GOOS)/$($GO env GOARCH)" &&
      bash .ci/release.sh sums "$tmp/out-$copy")
  done
  if ! diff "$tmp/out-a/SHA256SUMS" "$tmp/out-b/SHA256SUMS"; then
    echo "two builds of commit $COMMIT differ: the release is not reproducible" >&2
    exit 1
  fi
  cat "$tmp/out-a/SHA256SUMS"
  echo "release-check: two builds of $COMMIT gave the same $(wc -l < "$tmp/out-a/SHA256SUMS") binaries"
}

case ${1:-} in
  build) shift; build "$@" ;;
  sbom) sbom "$2" ;;
  sums) sums "$2" ;;
  check) check ;;
  version) echo "$VERSION" ;;
  date) echo "$DATE" ;;
  *) echo "usage: .ci/release.sh build OUT [PLATFORM...] | sbom OUT | sums OUT | check" >&2; exit 2 ;;
esac
