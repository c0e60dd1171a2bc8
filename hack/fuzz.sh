#!/usr/bin/env bash
# Runs every fuzz target of the main module (go test -fuzz, one target at a time, FUZZTIME each)
# and prints, per target and in total, the executions the fuzzer reports and whether it failed.
# A failing input is written by go test to the package's testdata/fuzz/<Target>/ (commit it: it
# becomes a regression case of the ordinary unit tests). Exits non-zero if any target fails.
#
#   FUZZTIME=60s hack/fuzz.sh            every target, 60 s each
#   FUZZ='FuzzInject' hack/fuzz.sh       the targets whose name matches the regexp
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "${ROOT}"
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZ=${FUZZ:-.}
LOGS="${ROOT}/_output/fuzz"
mkdir -p "${LOGS}"

# targets: "<package dir> <FuzzName>" for each fuzz target (func FuzzX(f *testing.F) in a _test.go
# file under pkg/ or cmd/) whose name matches the regexp ${FUZZ}.
targets() {
  grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' pkg cmd 2>/dev/null \
    | sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*).*#./\1 \2#' | awk -v re="${FUZZ}" '$2 ~ re' | sort
}

# execs LOG: the execution count of the fuzzer's last progress line ("fuzz: elapsed: 30s, execs:
# 123456 (4115/sec), ...") in LOG, 0 if there is none.
execs() {
  { grep -oE 'execs: [0-9]+' "$1" || echo 'execs: 0'; } | tail -n 1 | awk '{print $2}'
}

total=0
failed=0
printf '%-58s %-22s %12s  %s\n' PACKAGE TARGET EXECS RESULT
while read -r pkg target; do
  log="${LOGS}/${target}.log"
  result=ok
  if ! ${GO} test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME}" "${pkg}" >"${log}" 2>&1; then
    result="FAIL (see ${log#"${ROOT}"/})"
    failed=$((failed + 1))
  fi
  n=$(execs "${log}")
  total=$((total + n))
  printf '%-58s %-22s %12s  %s\n' "${pkg#./}" "${target}" "${n}" "${result}"
done < <(targets)
printf '%-58s %-22s %12s  %s\n' total '' "${total}" "$([[ ${failed} -eq 0 ]] && echo '0 failures' || echo "${failed} failing targets")"
[[ ${failed} -eq 0 ]]
