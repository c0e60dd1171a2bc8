#!/usr/bin/env bash
# Prints the linker flags that stamp this checkout's version into a binary (pkg/version):
#   go build -ldflags "$(hack/version.sh)" ./cmd/apiserver
# VERSION overrides the version (default: git describe --tags --always --dirty, prefixed with
# v0.0.0- when no tag is reachable, so that it reads as a semantic version).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pkg=github.com/sidecarset/apiserver/pkg/version
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
state=clean
if ! git diff --quiet HEAD -- 2>/dev/null; then state=dirty; fi
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
[[ ${version} == v[0-9]* ]] || version="v0.0.0-${version}"
# The commit's time, not the clock's: the same checkout builds the same binary.
date=$(TZ=UTC git show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD 2>/dev/null || echo 1970-01-01T00:00:00Z)
echo "-X ${pkg}.gitVersion=${version} -X ${pkg}.gitCommit=${commit} -X ${pkg}.gitTreeState=${state} -X ${pkg}.buildDate=${date}"
