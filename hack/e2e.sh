#!/usr/bin/env bash
# The end-to-end suite (make e2e) on two local clusters at once, each a hack/local-up.sh cluster of
# its own (LOCAL_STATE, ports), driven by its own go test process:
#
#   main       _output/local, the default ports, the real node when REAL_NODE=1: every test but
#              the catalogue's. Tests that restart, reconfigure or uninstall something run first,
#              one at a time (the serial phase); then every test that calls parallelTest runs at
#              once, in its own namespace with its own names (the parallel phase, -parallel).
#   catalogue  _output/local-catalogue, ports 42379.., 46443, 48443: the conformance scenarios,
#              which run one at a time on a cluster holding no other SidecarSet (the catalogue's
#              isolation rule: a scenario's SidecarSets must not meet another test's), and switch
#              the server's injection mode.
#
# Each shard's full log is _output/e2e/<shard>.log; the summary prints each test's time and each
# phase's. E2E_ARGS adds go test flags to both shards (e.g. E2E_ARGS='-run TestKubectl' narrows
# main to it; the catalogue shard then runs what matches both). Exit status: non-zero if a shard
# failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "${ROOT}"
OUT="${ROOT}/_output/e2e"
mkdir -p "${OUT}"
CATALOGUE='^(TestInjectionConformance|TestValidationConformance|TestRolloutConformance|TestConformanceAtV1beta1)$'
PARALLEL=${E2E_PARALLEL:-8}
read -r -a extra <<<"${E2E_ARGS:-}"

# What both clusters would otherwise build at the same moment: the cluster's binaries, the server
# and the test binary (into the Go build cache).
hack/install-tools.sh >/dev/null
go build -o /dev/null ./cmd/apiserver
go test -count=1 -run '^$' ./test/e2e/ >/dev/null

start=${SECONDS}
(
  export LOCAL_STATE="${ROOT}/_output/local-catalogue" ETCD_PORT=42379 SERVER_ETCD_PORT=42381 KUBE_PORT=46443 \
    SERVER_PORT=48443 SERVER_REPLICA_PORT=48444 REAL_NODE=
  E2E=1 go test -count=1 -timeout 60m -v -run "${CATALOGUE}" "${extra[@]}" ./test/e2e/ >"${OUT}/catalogue.log" 2>&1
) &
catalogue=$!
(
  E2E=1 go test -count=1 -timeout 60m -v -parallel "${PARALLEL}" -skip "${CATALOGUE}" "${extra[@]}" ./test/e2e/ \
    >"${OUT}/main.log" 2>&1
) &
main=$!

status=0
wait "${main}" || status=1
main_time=$((SECONDS - start))
wait "${catalogue}" || status=1
catalogue_time=$((SECONDS - start))

summary() { # summary SHARD SECONDS
  local log="${OUT}/$1.log"
  echo "== e2e shard $1: ${2} s (${log})"
  grep -E '^--- (PASS|FAIL|SKIP): Test[^/ ]+ ' "${log}" | sed -E 's/^--- (PASS|FAIL|SKIP): (Test[^ ]+) \(([0-9.]+)s\)/\3 \1 \2/' |
    sort -rn | awk '{ printf "   %8.1f s  %-4s %s\n", $1, $2, $3 }'
  grep -E '^e2e phases:' "${log}" || true
  if grep -qE '^(--- FAIL|FAIL|panic:)' "${log}"; then
    echo "-- failures of shard $1:"
    grep -E -- '--- FAIL|^\s+[a-z_]+_test\.go:[0-9]+:|^panic:|^FAIL' "${log}" | tail -n 400
  fi
  grep -E '^(ok|FAIL)\s' "${log}" || true
}
summary main "${main_time}"
summary catalogue "${catalogue_time}"
exit "${status}"
