#!/usr/bin/env bash
# The end-to-end suite (make e2e) on several local clusters at once, each a hack/local-up.sh
# cluster of its own (LOCAL_STATE folder, ports), driven by its own go test process. The tests
# spend their time waiting (policy grace periods, kubelet restart delays, rollouts paced by
# maxUnavailable, server restarts), not computing: the clusters share the cores well.
#
# Shards (name, then the tests it runs; main runs every test no other shard names):
#   catalogue-*  the conformance scenarios. Each runs one scenario at a time on a cluster holding no
#                other test's SidecarSet (the catalogue's isolation rule: a scenario's SidecarSets
#                must not meet another test's), and the injection scenarios switch the server's
#                injection mode.
#   serial-*     tests that restart, stop or reconfigure the server, its etcd or kube-apiserver,
#                or need every SidecarSet of the cluster to be theirs, one at a time, on a cluster
#                of their own (a catalogue runner clears the cluster before each scenario).
#   main         _output/local, the default ports, the real node when REAL_NODE=1: the other
#                tests that restart or reconfigure something first, one at a time (the serial
#                phase); then every test that calls parallelTest at once, each in its own
#                namespace with its own names (the parallel phase, -parallel).
#
# Each shard's go test -json output is _output/e2e/<shard>.json, its text _output/e2e/<shard>.log;
# the summary (hack/e2esummary) prints each test's time, each shard's and each phase's, the output of
# failed tests, and closes with "e2e: N passed, N failed, N skipped". E2E_RUN=<regexp> runs only the
# matching tests, on the main cluster alone (E2E_RUN=TestKubectl hack/e2e.sh); E2E_ARGS adds go test
# flags to every shard (e.g. -v). Exit status: non-zero if a shard failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "${ROOT}"
OUT="${ROOT}/_output/e2e"
mkdir -p "${OUT}"
PARALLEL=${E2E_PARALLEL:-8}
unset E2E_SCENARIO_SHARD # set by the shards below for their clusters alone
read -r -a extra <<<"${E2E_ARGS:-}"

# Balanced by the tests' times on a 2-core machine (the summary prints them): 6 to 10 minutes each.
# A shard may name an environment variable for its tests after its regexp: E2E_SCENARIO_SHARD=k/n
# runs every n-th scenario of a catalogue from the k-th.
SHARDS=(
  "catalogue-injection ^TestInjectionConformance$"
  "catalogue-rollout-1 ^TestRolloutConformance$ E2E_SCENARIO_SHARD=0/2"
  "catalogue-rollout-2 ^TestRolloutConformance$ E2E_SCENARIO_SHARD=1/2"
  "catalogue-v1beta1 ^(TestInjectionConformanceAtV1beta1|TestValidationConformanceAtV1beta1)$"
  "serial-1 ^(TestBackupRestore|TestPolicyDifferential|TestNotLoadedFailsSafe|TestNamespaceCapUnderConcurrentCreates|TestPodsCreatedWithTheirSidecarSetInWebhookMode|TestIntakeScopedToNamespace|TestIntakeScopedToLabelKey|TestHelmTakesOverAutomanagedAPIServices)$"
  "serial-2 ^(TestChaosRollout|TestPolicyServedThroughOutage|TestEtcdOutage|TestKubeSystemInjection|TestKubeSystemFailsOpen|TestLeaderElection|TestDocs)$"
  "serial-3 ^(TestLeaderStalledPastRenewal|TestIntakeFoldsAcrossNamespaces|TestNamespacedSidecarSet|TestNoGapWhenPathsChange|TestDeployWhileServerCannotStart|TestRestartKeepsSidecarSets|TestUninstallGarbageCollects|TestPolicyInjectionWithoutServer|TestNamespaceDeletionStallReported|TestPolicyDifferentialWhileWriting|TestValidationConformance)$"
)

if [[ -n "${E2E_RUN:-}" ]]; then
  SHARDS=() # a few tests: the main cluster is enough
fi

# What the clusters would otherwise build at the same moment: the cluster's binaries, the server,
# etcdctl and etcdutl (TestBackupRestore) and the test binary (into the Go build cache).
hack/install-tools.sh >/dev/null
hack/local-up.sh build-server
hack/local-up.sh build-etcd-tools
go test -count=1 -run '^$' ./test/e2e/ >/dev/null

start=${SECONDS}
declare -A pids
rm -f "${OUT}"/*.seconds
skip=""
i=0
for shard in "${SHARDS[@]}"; do
  read -r name run env <<<"${shard}"
  skip+="${skip:+|}${run}"
  i=$((i + 1))
  (
    # Cluster i: ports 20379+100i and the next (etcd), 20381+100i and the next (the server's
    # etcd), 26443+100i (kube-apiserver), 28443+100i and the next (the server and its replica),
    # below the kernel's ephemeral ports (32768 and up), which clients' connections take; no real
    # node. main, cluster 0, has hack/local-up.sh's default ports.
    export LOCAL_STATE="${ROOT}/_output/local-${name}" ETCD_PORT=$((20379 + 100 * i)) \
      SERVER_ETCD_PORT=$((20381 + 100 * i)) KUBE_PORT=$((26443 + 100 * i)) SERVER_PORT=$((28443 + 100 * i)) \
      SERVER_REPLICA_PORT=$((28444 + 100 * i)) REAL_NODE=
    [[ -z "${env}" ]] || export "${env?}"
    code=0
    E2E=1 go test -count=1 -timeout 60m -json -run "${run}" "${extra[@]}" ./test/e2e/ >"${OUT}/${name}.json" 2>&1 || code=$?
    echo $((SECONDS - start)) >"${OUT}/${name}.seconds"
    exit "${code}"
  ) &
  pids[${name}]=$!
done
(
  code=0
  select=(-skip "${skip}")
  [[ -z "${E2E_RUN:-}" ]] || select=(-run "${E2E_RUN}")
  E2E=1 go test -count=1 -timeout 60m -json -parallel "${PARALLEL}" "${select[@]}" "${extra[@]}" ./test/e2e/ \
    >"${OUT}/main.json" 2>&1 || code=$?
  echo $((SECONDS - start)) >"${OUT}/main.seconds"
  exit "${code}"
) &
pids[main]=$!

status=0
names=(main)
for shard in "${SHARDS[@]}"; do names+=("${shard%% *}"); done
for name in "${names[@]}"; do
  wait "${pids[${name}]}" || status=1
done

jsons=()
for name in "${names[@]}"; do
  echo "e2e shard ${name}: done after $(cat "${OUT}/${name}.seconds" 2>/dev/null || echo '?') s"
  jsons+=("${OUT}/${name}.json")
done
go run ./hack/e2esummary "${jsons[@]}"
echo "e2e: $((SECONDS - start)) s in all; logs in ${OUT}"
exit "${status}"
