#!/usr/bin/env bash
# Runs hack/verify-codegen.sh against an empty, temporary Go module cache, as on a fresh machine, so
# that a script step relying on a module already being in the cache fails here and not for a newcomer.
# The build cache is kept (it holds no module sources, only compiled results keyed by content).
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
MODCACHE=$(mktemp -d)
trap 'rm -rf "${MODCACHE}"' EXIT

echo "verify-codegen with an empty module cache (${MODCACHE})"
GOMODCACHE="${MODCACHE}" GOFLAGS="${GOFLAGS:+${GOFLAGS} }-modcacherw" "${SCRIPT_ROOT}/hack/verify-codegen.sh"
