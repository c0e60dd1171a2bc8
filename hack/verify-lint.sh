#!/usr/bin/env bash
# Lints the main module: gofmt, go vet, and staticcheck at a pinned version, which `go run`
# fetches from the Go module proxy into the module cache (no other download). Generated code
# (pkg/generated) is left to hack/verify-codegen.sh: staticcheck would report the deprecated
# upstream APIs it references.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
# staticcheck 2026.2.2, which supports the Go version of go.mod.
STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}

unformatted=$(git ls-files --cached --others --exclude-standard -- '*.go' | xargs gofmt -l)
if [ -n "$unformatted" ]; then
  echo "gofmt -l lists files that are not formatted:" >&2
  echo "$unformatted" >&2
  exit 1
fi

"$GO" vet ./...

"$GO" list ./... | grep -v '/pkg/generated/' |
  xargs "$GO" run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
echo "lint: gofmt, go vet and staticcheck ${STATICCHECK_VERSION} found nothing"
