#!/usr/bin/env bash
# Fails when the generated code differs from what hack/update-codegen.sh produces.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT

# Work on a copy so a stale tree is reported, not silently fixed.
mkdir -p "${TMP}/repo"
(cd "${SCRIPT_ROOT}" && tar --exclude=./_output --exclude=./.git -cf - .) | tar -C "${TMP}/repo" -xf -
(cd "${TMP}/repo" && REPORT_MODE="" hack/update-codegen.sh >"${TMP}/update.log" 2>&1) || {
  echo "update-codegen.sh failed:"; grep -v '^go: downloading' "${TMP}/update.log" | tail -n 40; exit 1; }

ret=0
for d in pkg hack/api-violations.list; do
  diff -Naupr "${SCRIPT_ROOT}/${d}" "${TMP}/repo/${d}" || ret=1
done
if [[ ${ret} -eq 0 ]]; then
  echo "generated code is up to date"
else
  echo "generated code is out of date: run hack/update-codegen.sh"
fi
exit ${ret}
