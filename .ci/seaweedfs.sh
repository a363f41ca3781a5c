#!/usr/bin/env bash
# Builds SeaweedFS's `weed` binary (the S3 gateway with its embedded Iceberg
# REST catalog) for the integration tests, or reuses a cached build, and
# prints its path. The binary is cached outside the repository, keyed by
# version: $COVMIRROR_CACHE (default ~/.cache/covmirror)/weed-VERSION/weed.
#
# `go install` refuses SeaweedFS (its go.mod has a replace directive), so it
# is built through a throwaway wrapper module that requires it and copies
# its require set and its one active replace. About 10 minutes on 2 cores.
set -euo pipefail

version=v0.0.0-20261109003541-7506e5f91cd6 # SeaweedFS 4.53
cache=${COVMIRROR_CACHE:-${HOME:-/tmp}/.cache/covmirror}/weed-$version
bin=$cache/weed
if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! info=$(go mod download -json "github.com/seaweedfs/seaweedfs@$version" 2>&1); then
  echo "could not download github.com/seaweedfs/seaweedfs@$version: $info" >&2
  exit 1
fi
modfile=$(printf '%s\n' "$info" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
[ -f "$modfile" ] || { echo "could not download github.com/seaweedfs/seaweedfs@$version" >&2; exit 1; }
{
  sed 's|^module .*|module covmirror-weed-build|' "$modfile"
  echo "require github.com/seaweedfs/seaweedfs $version"
} >"$work/go.mod"
mkdir -p "$cache"
echo "building SeaweedFS $version into $cache (about 10 minutes)..." >&2
(cd "$work" && GOFLAGS=-mod=mod go build -o "$bin.tmp" github.com/seaweedfs/seaweedfs/weed)
mv "$bin.tmp" "$bin"
echo "$bin"
