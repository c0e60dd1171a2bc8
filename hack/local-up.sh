#!/usr/bin/env bash
# A local control plane on 127.0.0.1 with the SidecarSet API server registered through the
# aggregation layer: etcd, kube-apiserver (front-proxy flags), kube-controller-manager,
# kube-scheduler, kwok with three fake nodes (kwok-node-0..2, label type=kwok) that play the kubelet
# through the stages in hack/kwok/ (pods run and become ready, in-place image changes restart
# containers, unpullable images stay in ImagePullBackOff; see hack/kwok/pod-stages.yaml), a second
# etcd for this server's own storage (TLS, client certificates required), this server running as
# the shipped ServiceAccount with the shipped RBAC (artifacts/deploy/base/rbac.yaml, through a
# token), the APIServices behind an ExternalName Service and the shipped injection webhooks. Binaries come from hack/install-tools.sh; state and logs (one per
# process, e.g. logs/kwok.log) live in _output/local/.
#
#   hack/local-up.sh [run]        up, apply the manual's first SidecarSet, wait for Ctrl-C, down
#   hack/local-up.sh up           start what is not running in the background and wait until ready
#   hack/local-up.sh down [--purge]
#   hack/local-up.sh restart-server | restart-server-etcd
#   hack/local-up.sh stop-server | start-server
#                                 stop this server and its etcd (an outage), start them again
#   hack/local-up.sh start-server-alone
#                                 start this server without its etcd (after stop-server): it
#                                 cannot load its SidecarSets, so it is never ready
#   hack/local-up.sh stop-server-etcd | start-server-etcd
#                                 stop the server's etcd alone (the server keeps running), start it
#   hack/local-up.sh snapshot-server-etcd FILE
#                                 etcdctl snapshot save FILE from the server's etcd, as the backup
#                                 CronJobs run it (etcdctl and etcdutl: hack/etcdimage, built into
#                                 _output/bin/etcd-tools)
#   hack/local-up.sh restore-server-etcd FILE
#                                 the restore procedure (artifacts/deploy/README.md, Restore) on the
#                                 local cluster: stop the servers and their etcd, delete its data
#                                 directory, etcdutl snapshot restore FILE into a new one with the
#                                 revision bumped and marked compacted, start etcd and the server
#   hack/local-up.sh start-replica | stop-replica
#                                 a second server process (sidecarset-apiserver-2) on the same
#                                 server etcd, kubeconfig and --namespace, listening on
#                                 SERVER_REPLICA_PORT (default SERVER_PORT+1) with its own cert dir;
#                                 not registered in the APIServices (kube-apiserver keeps routing to
#                                 the first), it competes for the controller Lease. down stops it too.
#   hack/local-up.sh restart-kwok re-read hack/kwok/*-stages.yaml (after editing a stage)
#   hack/local-up.sh build-server build the server as every start of it does (into _output/bin)
#   hack/local-up.sh build-etcd-tools
#                                 build etcdctl and etcdutl as snapshot-server-etcd does
#   hack/local-up.sh restart-kube-apiserver
#                                 stop kube-apiserver (SIGTERM) and start it again, until ready
#   hack/local-up.sh stop-kube-apiserver | start-kube-apiserver
#                                 the same in two steps (an outage as long as the caller waits)
#   hack/local-up.sh env          print the export line
#   hack/local-up.sh node-deploy-images
#                                 build the server's image (make image) and an etcd image
#                                 (hack/etcdimage), import them into the real node's containerd
#   hack/local-up.sh node-up | node-down
#                                 a real node beside the kwok ones (needs root): containerd, runc
#                                 and the CNI plugins (installed with apt-get when missing),
#                                 containerd with its own root, state and socket under
#                                 _output/local/node, the test images of hack/testimage imported,
#                                 and a kubelet registering node NODE_NAME (default real-node-0,
#                                 label and NoSchedule taint sidecarset.dev/real-kubelet=true);
#                                 waits until it is Ready. node-down stops kubelet and containerd,
#                                 unmounts what they mounted and removes their state (pods bound to
#                                 the node are started again by the next node-up). down runs it too.
#
# LOCAL_STATE (default _output/local): the cluster's folder; with other ports (ETCD_PORT,
# SERVER_ETCD_PORT, KUBE_PORT, SERVER_PORT; each uses the next port too) a second cluster runs
# beside the first (hack/e2e.sh runs the conformance catalogue on one). Only one may have REAL_NODE.
# SERVER_INJECTION (default policy): the server's --injection mode, policy or webhook;
# SERVER_POLICY_GRACE (default 3s): its --policy-grace (a local kube-apiserver loads policies fast).
# SERVER_V (default 2): its log verbosity (2 logs every write of policies and webhooks).
# SERVER_NAMESPACED_BYTES (default 4Mi): its --max-namespaced-bytes-per-namespace (the default 16Mi
# would have the end-to-end test of the budget write four times as much to reach it).
# SERVER_ARGS: more flags for the server (split on spaces), e.g. --refuse-pod-security-violations.
# KWOK_IMAGE_CHANGE_DELAY_MS (default 1000): how long the fake kubelet takes to restart a container
# whose image changed in place (a pod's annotation kwok.x-k8s.io/image-change-delay overrides it).
# REAL_NODE=1: up starts the real node too (node-up). NODE_NAME, NODE_IP (default the host's first
# address of `hostname -I`), NODE_POD_CIDR (default 10.222.0.0/24), KUBELET_PORT (default 10250),
# KUBELET_HEALTHZ_PORT (default 10248) and NODE_DNS (the pods' cluster DNS, default the bridge's address,
# the first of NODE_POD_CIDR) configure it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
STATE="${LOCAL_STATE:-${ROOT}/_output/local}"
CERTS="${STATE}/certs"
RUN="${STATE}/run"
LOGS="${STATE}/logs"
KUBECONFIG_FILE="${STATE}/kubeconfig"
ETCD_PORT=${ETCD_PORT:-32379}
SERVER_ETCD_PORT=${SERVER_ETCD_PORT:-32381}
KUBE_PORT=${KUBE_PORT:-36443}
SERVER_PORT=${SERVER_PORT:-38443}
SERVER_REPLICA_PORT=${SERVER_REPLICA_PORT:-$((SERVER_PORT + 1))}
KWOK_IMAGE_CHANGE_DELAY_MS=${KWOK_IMAGE_CHANGE_DELAY_MS:-1000}
# The server's namespace: the rendered base's (hack/render-deploy.sh), whose namespace.yaml and
# rbac.yaml this script applies, and artifacts/local/registration.yaml's.
NAMESPACE=sidecarset-system
NODE="${STATE}/node"
NODE_NAME=${NODE_NAME:-real-node-0}
NODE_POD_CIDR=${NODE_POD_CIDR:-10.222.0.0/24}
# The bridge's address (the CNI bridge's gateway, the first address of NODE_POD_CIDR): the pods'
# cluster DNS server (nothing listens there unless a test serves names).
NODE_DNS=${NODE_DNS:-$(echo "${NODE_POD_CIDR%/*}" | awk -F. '{print $1"."$2"."$3"."$4+1}')}
KUBELET_PORT=${KUBELET_PORT:-10250}
KUBELET_HEALTHZ_PORT=${KUBELET_HEALTHZ_PORT:-10248}
CONTAINERD_SOCK="${NODE}/containerd/containerd.sock"
# The real node's images (hack/testimage), built here and imported into containerd: no registry.
PAUSE_IMAGE=sidecarset.dev/pause:local
TEST_IMAGE=sidecarset.dev/test
TEST_IMAGE_VERSIONS="v1 v2 v3"

log() { echo "local-up: $*" >&2; }

tools() {
  local out
  out=$("${ROOT}/hack/install-tools.sh")
  BIN=$(tail -n 1 <<<"${out}"); KWOK=$(tail -n 2 <<<"${out}" | head -n 1); KUBECTL="${BIN}/kubectl"
}

kc() { "${KUBECTL}" --kubeconfig "${KUBECONFIG_FILE}" "$@"; }

# alive PID: the process exists and is not a zombie (a killed process whose parent, init here,
# has not reaped it yet still answers kill -0).
alive() {
  local state
  state=$(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null) && [[ -n "${state}" && "${state}" != Z ]]
}

# start NAME CMD... runs a process in its own session, logging to logs/NAME.log.
start() {
  local name=$1; shift
  if [[ -f "${RUN}/${name}.pid" ]] && alive "$(cat "${RUN}/${name}.pid")"; then
    return
  fi
  echo "---- $(date -u +%FT%TZ) start ${name}" >>"${LOGS}/${name}.log"
  setsid "$@" >>"${LOGS}/${name}.log" 2>&1 < /dev/null &
  echo $! >"${RUN}/${name}.pid"
}

stop() {
  local name=$1 pid
  [[ -f "${RUN}/${name}.pid" ]] || return 0
  pid=$(cat "${RUN}/${name}.pid")
  kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true
  for _ in $(seq 50); do alive "${pid}" || break; sleep 0.1; done
  if alive "${pid}"; then
    kill -KILL -- "-${pid}" 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
  fi
  # Until it is gone, threads and all (a leader already a zombie may still have threads holding
  # its ports, which would make the next start fail).
  for _ in $(seq 100); do [[ -e "/proc/${pid}" ]] || break; sleep 0.1; done
  rm -f "${RUN}/${name}.pid"
}

# wait_for DESCRIPTION LOG CMD... retries CMD for up to 120 s.
wait_for() {
  local what=$1 logfile=$2; shift 2
  for _ in $(seq 240); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "timed out waiting for ${what}; last lines of ${logfile}:"
  tail -n 30 "${logfile}" >&2 || true
  return 1
}

cert() { # cert NAME CN ORG CA [SAN]
  local name=$1 cn=$2 org=$3 ca=$4 san=${5:-}
  [[ -f "${CERTS}/${name}.crt" ]] && return
  openssl req -new -newkey rsa:2048 -nodes -keyout "${CERTS}/${name}.key" -subj "/CN=${cn}${org:+/O=${org}}" \
    -out "${CERTS}/${name}.csr" 2>/dev/null
  local ext="${CERTS}/${name}.ext"
  echo "extendedKeyUsage=clientAuth,serverAuth" >"${ext}"
  [[ -n "${san}" ]] && echo "subjectAltName=${san}" >>"${ext}"
  openssl x509 -req -in "${CERTS}/${name}.csr" -CA "${CERTS}/${ca}.crt" -CAkey "${CERTS}/${ca}.key" \
    -CAcreateserial -days 3650 -extfile "${ext}" -out "${CERTS}/${name}.crt" 2>/dev/null
}

ca() {
  [[ -f "${CERTS}/$1.crt" ]] && return
  openssl req -x509 -new -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$1" \
    -keyout "${CERTS}/$1.key" -out "${CERTS}/$1.crt" 2>/dev/null
}

certs() {
  mkdir -p "${CERTS}"
  ca cluster-ca
  ca front-proxy-ca
  cert apiserver kube-apiserver "" cluster-ca "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
  cert admin admin system:masters cluster-ca
  cert front-proxy-client front-proxy-client "" front-proxy-ca
  # The server's etcd: TLS for clients and peers, client certificates required.
  ca etcd-ca
  cert server-etcd server-etcd "" etcd-ca "IP:127.0.0.1,DNS:localhost"
  cert server-etcd-client sidecarset-apiserver "" etcd-ca
  [[ -f "${CERTS}/sa.key" ]] || openssl genrsa -out "${CERTS}/sa.key" 2048 2>/dev/null
  [[ -f "${CERTS}/sa.pub" ]] || openssl rsa -in "${CERTS}/sa.key" -pubout -out "${CERTS}/sa.pub" 2>/dev/null
  cat >"${KUBECONFIG_FILE}" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:${KUBE_PORT}", certificate-authority: "${CERTS}/cluster-ca.crt"}
users:
- name: admin
  user: {client-certificate: "${CERTS}/admin.crt", client-key: "${CERTS}/admin.key"}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
KC
}

# admission_config writes kube-apiserver's admission configuration: the static admission policy
# that limits the server's ServiceAccount to its own MutatingAdmissionPolicies and bindings
# (artifacts/deploy/static, loaded from a copy in the state folder).
admission_config() {
  mkdir -p "${STATE}/static-admission"
  cp "${ROOT}"/artifacts/deploy/static/*.yaml "${STATE}/static-admission/"
  cat >"${STATE}/admission-config.yaml" <<AC
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionPolicy
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ValidatingAdmissionPolicyConfiguration
    staticManifestsDir: ${STATE}/static-admission
AC
}

# start_kube_apiserver runs kube-apiserver (when it is not running) and waits until it is ready.
start_kube_apiserver() {
  admission_config
  start kube-apiserver "${BIN}/kube-apiserver" --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
    --bind-address=127.0.0.1 --secure-port="${KUBE_PORT}" --advertise-address=10.0.0.1 \
    --tls-cert-file="${CERTS}/apiserver.crt" --tls-private-key-file="${CERTS}/apiserver.key" \
    --client-ca-file="${CERTS}/cluster-ca.crt" --authorization-mode=Node,RBAC \
    --service-cluster-ip-range=10.0.0.0/24 \
    --service-account-key-file="${CERTS}/sa.pub" --service-account-signing-key-file="${CERTS}/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --requestheader-client-ca-file="${CERTS}/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="${CERTS}/front-proxy-client.crt" --proxy-client-key-file="${CERTS}/front-proxy-client.key" \
    --kubelet-client-certificate="${CERTS}/admin.crt" --kubelet-client-key="${CERTS}/admin.key" \
    --kubelet-preferred-address-types=InternalIP \
    --feature-gates=ManifestBasedAdmissionControlConfig=true --admission-control-config-file="${STATE}/admission-config.yaml"
  wait_for kube-apiserver "${LOGS}/kube-apiserver.log" kc get --raw /readyz
}

start_kube() {
  start etcd "${BIN}/etcd" -data-dir "${STATE}/etcd" -listen-client-urls "http://127.0.0.1:${ETCD_PORT}" \
    -listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))"
  start_kube_apiserver
  # --node-monitor-grace-period: kwok's node heartbeat comes every 20-25 s (hack/kwok/node-stages.yaml),
  # twice a kubelet's; with the default 50 s, a kube-apiserver restart on a loaded machine (tests
  # restart it) marked the kwok nodes NotReady and every pod on them not ready, which no rollout did.
  start kube-controller-manager "${BIN}/kube-controller-manager" --kubeconfig="${KUBECONFIG_FILE}" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false --node-monitor-grace-period=2m \
    --service-account-private-key-file="${CERTS}/sa.key" --root-ca-file="${CERTS}/cluster-ca.crt" \
    --use-service-account-credentials=false
  start kube-scheduler "${BIN}/kube-scheduler" --kubeconfig="${KUBECONFIG_FILE}" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false
}

# start_kwok runs kwok for the nodes annotated kwok.x-k8s.io/node=fake with its options
# (hack/kwok/kwok.yaml) and the stages of hack/kwok (the image-change delay substituted), then applies the fake nodes and waits until they are Ready
# and untainted. kwok serves no port (no --server-address/--node-port) and keeps no node Leases
# (see hack/kwok/node-stages.yaml).
start_kwok() {
  [[ "${KWOK_IMAGE_CHANGE_DELAY_MS}" =~ ^[0-9]+$ ]] || { log "KWOK_IMAGE_CHANGE_DELAY_MS must be a number"; exit 2; }
  mkdir -p "${STATE}/kwok"
  local f
  for f in "${ROOT}"/hack/kwok/kwok.yaml "${ROOT}"/hack/kwok/*-stages.yaml; do cat "$f"; echo "---"; done |
    sed -E "s/^( *durationMilliseconds: )[0-9]+( # KWOK_IMAGE_CHANGE_DELAY_MS)/\1${KWOK_IMAGE_CHANGE_DELAY_MS}\2/" \
    >"${STATE}/kwok/stages.yaml"
  start kwok env KWOK_WORKDIR="${STATE}/kwok" "${KWOK}" --kubeconfig="${KUBECONFIG_FILE}" \
    --config="${STATE}/kwok/stages.yaml" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.250.0.0/16
  kc apply -f "${ROOT}/hack/kwok/nodes.yaml" >/dev/null
  wait_for "kwok nodes Ready" "${LOGS}/kwok.log" kc wait --for=condition=Ready --timeout=1s node/kwok-node-0 node/kwok-node-1 node/kwok-node-2
  wait_for "kwok nodes untainted" "${LOGS}/kube-controller-manager.log" kwok_nodes_untainted
}

kwok_nodes_untainted() {
  local taints
  taints=$(kc get node kwok-node-0 kwok-node-1 kwok-node-2 -o jsonpath='{.items[*].spec.taints}') && [[ -z "${taints}" ]]
}

# start_server_etcd runs the server's etcd as artifacts/deploy runs it: TLS only, client
# certificates required from clients and peers.
start_server_etcd() {
  local client="https://127.0.0.1:${SERVER_ETCD_PORT}" peer="https://127.0.0.1:$((SERVER_ETCD_PORT + 1))" try
  # A port still held by the previous etcd (or anything else) makes it exit at once: try again.
  for try in 1 2 3 4 5; do
    start server-etcd "${BIN}/etcd" -data-dir "${STATE}/server-etcd" -listen-client-urls "${client}" -listen-peer-urls "${peer}" \
      -cert-file "${CERTS}/server-etcd.crt" -key-file "${CERTS}/server-etcd.key" \
      -client-cert-auth -trusted-ca-file "${CERTS}/etcd-ca.crt" \
      -peer-cert-file "${CERTS}/server-etcd.crt" -peer-key-file "${CERTS}/server-etcd.key" \
      -peer-client-cert-auth -peer-trusted-ca-file "${CERTS}/etcd-ca.crt"
    sleep 1
    alive "$(cat "${RUN}/server-etcd.pid")" && return 0
    log "the server's etcd exited at once (try ${try}); last lines of ${LOGS}/server-etcd.log:"
    tail -n 3 "${LOGS}/server-etcd.log" >&2 || true
    sleep 2
  done
  return 1
}

# etcd_tools builds hack/etcdimage (etcd, etcdctl and etcdutl in one binary, chosen by its name)
# into _output/bin/etcd-tools, with etcdctl and etcdutl links to it; go build links again only
# when a source changed. Local clusters may build at once: one at a time.
etcd_tools() {
  local dir="${ROOT}/_output/bin/etcd-tools"
  mkdir -p "${dir}"
  (cd "${ROOT}/hack/etcdimage" && flock "${dir}/.lock" go build -o "${dir}/etcd" .)
  ln -sf etcd "${dir}/etcdctl"
  ln -sf etcd "${dir}/etcdutl"
  ETCDCTL="${dir}/etcdctl" ETCDUTL="${dir}/etcdutl"
}

# snapshot_server_etcd FILE saves a snapshot of the server's etcd to FILE with the command of the
# backup CronJobs (charts/sidecarset-apiserver/templates/etcd-backup.yaml) and the server's client
# certificate.
snapshot_server_etcd() {
  local file=${1:?usage: $0 snapshot-server-etcd FILE}
  etcd_tools
  "${ETCDCTL}" --endpoints "https://127.0.0.1:${SERVER_ETCD_PORT}" --cacert "${CERTS}/etcd-ca.crt" \
    --cert "${CERTS}/server-etcd-client.crt" --key "${CERTS}/server-etcd-client.key" \
    --command-timeout 2m snapshot save "${file}" >>"${LOGS}/etcd-tools.log" 2>&1 ||
    { log "etcdctl snapshot save failed; last lines of ${LOGS}/etcd-tools.log:"; tail -n 5 "${LOGS}/etcd-tools.log" >&2; return 1; }
  log "snapshot of the server's etcd saved to ${file}"
}

# RESTORE_BUMP_REVISION: how far restore-server-etcd moves etcd's revision past the snapshot's (the
# procedure's --bump-revision, with --mark-compacted): every resourceVersion a client saw before
# the restore stays below the restored store's, and a watch or list from one is answered 410
# Expired instead of missing what changed. 0 restores the revisions as the snapshot has them.
RESTORE_BUMP_REVISION=${RESTORE_BUMP_REVISION:-1000000000}

# restore_server_etcd FILE is the restore procedure on the local cluster's single member: writers
# and etcd stopped, the data directory deleted, the snapshot restored into a new one (the member's
# name, peer URL and cluster token as hack/tools/etcd starts it), etcd and the server started.
restore_server_etcd() {
  local file=${1:?usage: $0 restore-server-etcd FILE} peer="https://127.0.0.1:$((SERVER_ETCD_PORT + 1))"
  [[ -s "${file}" ]] || { log "no snapshot at ${file}"; exit 1; }
  etcd_tools
  stop sidecarset-apiserver-2
  stop sidecarset-apiserver
  stop server-etcd
  rm -rf "${STATE}/server-etcd"
  local bump=()
  if [[ "${RESTORE_BUMP_REVISION}" != 0 ]]; then bump=(--bump-revision "${RESTORE_BUMP_REVISION}" --mark-compacted); fi
  "${ETCDUTL}" snapshot restore "${file}" --data-dir "${STATE}/server-etcd" --name default \
    --initial-cluster "default=${peer}" --initial-advertise-peer-urls "${peer}" \
    --initial-cluster-token etcd-cluster "${bump[@]}" >>"${LOGS}/etcd-tools.log" 2>&1 ||
    { log "etcdutl snapshot restore failed; last lines of ${LOGS}/etcd-tools.log:"; tail -n 5 "${LOGS}/etcd-tools.log" >&2; return 1; }
  log "${file} restored into ${STATE}/server-etcd (revision bumped by ${RESTORE_BUMP_REVISION})"
  start_server
  register
}

# server_kubeconfig applies the shipped namespace, ServiceAccount and RBAC and writes a kubeconfig
# with a token of that ServiceAccount: the server runs with exactly the shipped permissions.
server_kubeconfig() {
  wait_for "the shipped RBAC" "${LOGS}/kube-apiserver.log" \
    kc apply -f "${ROOT}/artifacts/deploy/base/namespace.yaml" -f "${ROOT}/artifacts/deploy/base/rbac.yaml"
  local token="" _
  for _ in $(seq 120); do # kube-apiserver may still be starting its ServiceAccount token signer
    token=$(kc -n "${NAMESPACE}" create token sidecarset-apiserver --duration=720h 2>/dev/null) && break
    sleep 0.5
  done
  [[ -n "${token}" ]] || { log "cannot create a token for the server's ServiceAccount"; return 1; }
  cat >"${STATE}/server.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:${KUBE_PORT}", certificate-authority: "${CERTS}/cluster-ca.crt"}
users:
- name: sidecarset-apiserver
  user: {token: "${token}"}
contexts:
- name: local
  context: {cluster: local, user: sidecarset-apiserver}
current-context: local
KC
}

# server_flags PORT CERT_DIR: the server's flags.
server_flags() {
  echo --etcd-servers="https://127.0.0.1:${SERVER_ETCD_PORT}" --etcd-cafile="${CERTS}/etcd-ca.crt" \
    --etcd-certfile="${CERTS}/server-etcd-client.crt" --etcd-keyfile="${CERTS}/server-etcd-client.key" \
    --secure-port="$1" --bind-address=127.0.0.1 --cert-dir="$2" --kubeconfig="${STATE}/server.kubeconfig" \
    --authentication-kubeconfig="${STATE}/server.kubeconfig" --authorization-kubeconfig="${STATE}/server.kubeconfig" \
    --namespace="${NAMESPACE}" --injection="${SERVER_INJECTION:-policy}" --policy-grace="${SERVER_POLICY_GRACE:-3s}" --v="${SERVER_V:-2}" \
    --max-namespaced-bytes-per-namespace="${SERVER_NAMESPACED_BYTES:-4Mi}" ${SERVER_ARGS:-}
}

start_server() {
  start_server_etcd
  start_server_process
}

# build_server builds the server into _output/bin. go build links again only when a source or a
# flag changed: it compares the build ID of _output/bin/build/sidecarset-apiserver (a link takes
# about 10 s of CPU, and the tests restart the server about 50 times). Running servers run
# _output/bin/sidecarset-apiserver, a hard link to it: a new link is written to a new file (go
# replaces its output, never writes into it) and swapped in with mv. Local clusters (LOCAL_STATE)
# may build at once while others run the server: one builds and swaps at a time.
build_server() {
  local dir="${ROOT}/_output/bin/build"
  mkdir -p "${dir}"
  # shellcheck disable=SC2016 # expanded by the inner bash
  (cd "${ROOT}" && flock "${dir}/.lock" bash -c '
    set -e
    go build -ldflags "$1" -o "$2" ./cmd/apiserver
    [[ "$2" -ef "$3" ]] && exit 0
    trap "rm -f \"$3.$$\"" EXIT
    ln -f "$2" "$3.$$"
    mv -f "$3.$$" "$3"' build_server "$(hack/version.sh)" "${dir}/sidecarset-apiserver" "${ROOT}/_output/bin/sidecarset-apiserver")
}

# current_serving_cert NAME DIR: unless process NAME runs, removes the self-signed serving
# certificate the server wrote in DIR for another namespace (a state folder from before NAMESPACE
# changed), so that it writes one for the Service the APIServices name now.
current_serving_cert() {
  local crt="$2/apiserver.crt"
  if [[ -f "${RUN}/$1.pid" ]] && alive "$(cat "${RUN}/$1.pid")"; then
    return 0
  fi
  [[ -f "${crt}" ]] || return 0
  if ! openssl x509 -in "${crt}" -noout -ext subjectAltName 2>/dev/null | grep -q "DNS:sidecarset-apiserver.${NAMESPACE}.svc"; then
    log "the serving certificate in $2 names another namespace: written again for ${NAMESPACE}"
    rm -f "${crt}" "$2/apiserver.key"
  fi
}

# start_server_process starts this server without its etcd (start-server-alone: a server that
# cannot load its SidecarSets).
start_server_process() {
  server_kubeconfig
  build_server
  current_serving_cert sidecarset-apiserver "${STATE}/server-certs"
  # shellcheck disable=SC2046 # the flags hold no spaces
  start sidecarset-apiserver "${ROOT}/_output/bin/sidecarset-apiserver" $(server_flags "${SERVER_PORT}" "${STATE}/server-certs")
  wait_for "the server's certificate" "${LOGS}/sidecarset-apiserver.log" test -s "${STATE}/server-certs/apiserver.crt"
}

# start_replica runs the second server process with the first one's flags but its own port and
# cert dir, and waits until it is ready.
start_replica() {
  [[ -f "${RUN}/server-etcd.pid" ]] || { log "the cluster is not up: run $0 up first"; exit 1; }
  build_server
  current_serving_cert sidecarset-apiserver-2 "${STATE}/server-2-certs"
  # shellcheck disable=SC2046 # the flags hold no spaces
  start sidecarset-apiserver-2 "${ROOT}/_output/bin/sidecarset-apiserver" $(server_flags "${SERVER_REPLICA_PORT}" "${STATE}/server-2-certs")
  wait_for "the replica's certificate" "${LOGS}/sidecarset-apiserver-2.log" test -s "${STATE}/server-2-certs/apiserver.crt"
  wait_for "the replica's /readyz" "${LOGS}/sidecarset-apiserver-2.log" \
    kc --server="https://127.0.0.1:${SERVER_REPLICA_PORT}" --certificate-authority="${STATE}/server-2-certs/apiserver.crt" \
    get --raw /readyz
}

register() {
  local ca
  ca=$(base64 -w0 <"${STATE}/server-certs/apiserver.crt")
  local f
  for f in "${ROOT}"/artifacts/local/*.yaml "${ROOT}"/artifacts/deploy/base/webhook.yaml "${ROOT}"/artifacts/deploy/base/server-guard.yaml; do cat "$f"; echo "---"; done |
    sed -e "s|CA_BUNDLE|${ca}|g" -e "s|SERVER_PORT|${SERVER_PORT}|g" | kc apply -f - >/dev/null
  wait_for "APIService v1alpha1.apps.kruise.io" "${LOGS}/sidecarset-apiserver.log" \
    kc wait --for=condition=Available --timeout=1s apiservice/v1alpha1.apps.kruise.io
  wait_for "APIService v1beta1.apps.kruise.io" "${LOGS}/sidecarset-apiserver.log" \
    kc wait --for=condition=Available --timeout=1s apiservice/v1beta1.apps.kruise.io
  wait_for "APIService v1.admission.kruise.io" "${LOGS}/sidecarset-apiserver.log" \
    kc wait --for=condition=Available --timeout=1s apiservice/v1.admission.kruise.io
  wait_for "default ServiceAccount" "${LOGS}/kube-controller-manager.log" kc -n default get serviceaccount default
}

# ---- the real node (node-up, node-down) ----

ctr_() { ctr --address "${CONTAINERD_SOCK}" --namespace k8s.io "$@"; }

# node_packages installs containerd, runc and the CNI plugins with apt-get when one is missing.
node_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || missing+=(containernetworking-plugins)
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]} with apt-get (log: ${LOGS}/apt-get.log)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "${missing[@]}" >"${LOGS}/apt-get.log" 2>&1; then
    apt-get update >>"${LOGS}/apt-get.log" 2>&1 &&
      apt-get install -y --no-install-recommends "${missing[@]}" >>"${LOGS}/apt-get.log" 2>&1 ||
      { log "apt-get failed; last lines of ${LOGS}/apt-get.log:"; tail -n 20 "${LOGS}/apt-get.log" >&2; return 1; }
  fi
}

# node_containerd writes containerd's configuration (root, state, sockets, CNI configuration and
# runc's state under _output/local/node; nothing system-wide) and starts it.
node_containerd() {
  local d="${NODE}/containerd"
  mkdir -p "${d}/root" "${d}/state" "${d}/opt" "${d}/runc" "${NODE}/cni/net.d" "${NODE}/cni/ipam"
  cat >"${d}/config.toml" <<TOML
version = 2
root = "${d}/root"
state = "${d}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "${CONTAINERD_SOCK}"
[ttrpc]
  address = "${CONTAINERD_SOCK}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${d}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # No CAP_SYS_RESOURCE where this runs (e.g. in a container): runc may not lower oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${d}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${NODE}/cni/net.d"
TOML
  # The pods' network: a bridge with host-local addresses; the host reaches pod IPs through it.
  cat >"${NODE}/cni/net.d/10-sidecarset.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "sidecarset-local",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "sidecarset0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "${NODE_POD_CIDR}"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "${NODE}/cni/ipam"
      }
    }
  ]
}
JSON
  start containerd containerd --config "${d}/config.toml"
  wait_for containerd "${LOGS}/containerd.log" ctr_ version
}

# node_images builds the static programs of hack/testimage (the pause image and the test image at
# each version of TEST_IMAGE_VERSIONS, the version linked in, so each version has its own digest),
# writes their OCI archives with hack/release/cmd/image and imports them into containerd's k8s.io namespace,
# and tags v1's image alias-v1 too.
node_images() {
  local dir="${NODE}/images" v
  mkdir -p "${dir}"
  (cd "${ROOT}/hack/release" && go build -o "${ROOT}/_output/bin/image" ./cmd/image)
  build_image() { # build_image NAME REF ENTRYPOINT PKG [LDFLAGS]
    local name=$1 ref=$2 entrypoint=$3 pkg=$4 ldflags=${5:-}
    (cd "${ROOT}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${ldflags}" -o "${dir}/${name}" "${pkg}")
    "${ROOT}/_output/bin/image" -binary "${dir}/${name}" -ref "${ref}" -entrypoint "${entrypoint}" -user 0:0 \
      -layout "${dir}/${name}.oci" -archive "${dir}/${name}.tar" >/dev/null
    ctr_ images import "${dir}/${name}.tar" >/dev/null
  }
  build_image pause "${PAUSE_IMAGE}" /pause ./hack/testimage/pause
  for v in ${TEST_IMAGE_VERSIONS}; do
    build_image "test-${v}" "${TEST_IMAGE}:${v}" /testimage ./hack/testimage "-X main.version=${v}"
  done
  # A second tag of v1's image: containerd reports a container's image as the first tag of its
  # digest (alias-v1 sorts first), whatever tag the spec names.
  ctr_ images tag --force "${TEST_IMAGE}:v1" "${TEST_IMAGE}:alias-v1" >/dev/null
}

# node_kubelet writes the kubelet's certificate (system:node:NODE_NAME in system:nodes, for the
# Node authorizer), kubeconfig and KubeletConfiguration, starts it and waits until the node is Ready.
node_kubelet() {
  local d="${NODE}/kubelet" ip
  ip=${NODE_IP:-$(hostname -I | awk '{print $1}')}
  [[ -n "${ip}" ]] || { log "no host address for the node: set NODE_IP"; return 1; }
  mkdir -p "${d}/root" "${NODE}/pod-logs"
  cert "node-${NODE_NAME}" "system:node:${NODE_NAME}" system:nodes cluster-ca
  cat >"${d}/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:${KUBE_PORT}", certificate-authority: "${CERTS}/cluster-ca.crt"}
users:
- name: ${NODE_NAME}
  user: {client-certificate: "${CERTS}/node-${NODE_NAME}.crt", client-key: "${CERTS}/node-${NODE_NAME}.key"}
contexts:
- name: local
  context: {cluster: local, user: ${NODE_NAME}}
current-context: local
KC
  cat >"${d}/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${ip}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
# kube-apiserver calls it (logs, exec) with the admin certificate of the cluster CA.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "${CERTS}/cluster-ca.crt"}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
imageServiceEndpoint: unix://${CONTAINERD_SOCK}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podLogsDir: "${NODE}/pod-logs"
resolvConf: /etc/resolv.conf
# Cluster DNS at the pod bridge's gateway, where a test that needs names (TestRealNodeDeployment:
# etcd members by their headless-Service names) serves them; no other pod resolves a name.
clusterDNS: [${NODE_DNS}]
clusterDomain: cluster.local
registerWithTaints:
- {key: sidecarset.dev/real-kubelet, value: "true", effect: NoSchedule}
# The images are imported, not pulled: never collect them, and no eviction on a full build disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
serializeImagePulls: false
YAML
  start kubelet "${BIN}/kubelet" --config="${d}/config.yaml" --kubeconfig="${d}/kubeconfig" \
    --root-dir="${d}/root" --cert-dir="${d}/pki" --hostname-override="${NODE_NAME}" --node-ip="${ip}" \
    --node-labels=sidecarset.dev/real-kubelet=true --v=2
  wait_for "node ${NODE_NAME} Ready" "${LOGS}/kubelet.log" kc wait --for=condition=Ready --timeout=1s "node/${NODE_NAME}"
}

# DEPLOY_IMAGE and DEPLOY_ETCD_IMAGE: the images the real-node deployment test
# (TestRealNodeDeployment) runs artifacts/deploy with (test/e2e/testdata/deploy-real-node).
DEPLOY_IMAGE=${DEPLOY_IMAGE:-sidecarset.dev/sidecarset-apiserver:local}
DEPLOY_ETCD_IMAGE=${DEPLOY_ETCD_IMAGE:-sidecarset.dev/etcd:local}

# node_deploy_images builds the server's image with `make image` and an etcd image (etcd's own
# server, etcdctl and etcdutl, hack/etcdimage, reached as /usr/local/bin/etcd, etcdctl and etcdutl)
# with hack/release/cmd/image,
# and imports both into the real node's containerd.
node_deploy_images() {
  [[ -f "${RUN}/containerd.pid" ]] || { log "the real node is not up: run $0 node-up first"; exit 1; }
  local dir="${NODE}/images" t0=${SECONDS}
  mkdir -p "${dir}"
  (cd "${ROOT}" && make -s image IMAGE_TAG="${DEPLOY_IMAGE}" >/dev/null)
  ctr_ images import "${ROOT}/_output/image/sidecarset-apiserver.tar" >/dev/null
  (cd "${ROOT}/hack/release" && go build -o "${ROOT}/_output/bin/image" ./cmd/image)
  (cd "${ROOT}/hack/etcdimage" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${dir}/etcd" .)
  "${ROOT}/_output/bin/image" -binary "${dir}/etcd" -ref "${DEPLOY_ETCD_IMAGE}" -entrypoint /etcd \
    -link /usr/local/bin/etcd -link /usr/local/bin/etcdctl -link /usr/local/bin/etcdutl -layout "${dir}/etcd.oci" -archive "${dir}/etcd.tar" >/dev/null
  ctr_ images import "${dir}/etcd.tar" >/dev/null
  log "images ${DEPLOY_IMAGE} and ${DEPLOY_ETCD_IMAGE} imported ($((SECONDS - t0)) s)"
}

node_up() {
  [[ "$(id -u)" == 0 ]] || { log "the real node needs root (containerd, runc, the kubelet)"; exit 1; }
  [[ -f "${RUN}/kube-apiserver.pid" ]] || { log "the cluster is not up: run $0 up first"; exit 1; }
  mkdir -p "${RUN}" "${LOGS}" "${NODE}"
  local t0=${SECONDS}
  node_packages
  node_containerd
  node_images
  node_kubelet
  log "node ${NODE_NAME} Ready ($((SECONDS - t0)) s)"
}

# node_down stops the kubelet, every container, then containerd, unmounts what they mounted under
# _output/local/node and removes their state, so that the next node-up starts clean.
node_down() {
  [[ -d "${NODE}" ]] || return 0 # this cluster never had a real node (another LOCAL_STATE may)
  stop kubelet
  if [[ -f "${RUN}/containerd.pid" ]] && alive "$(cat "${RUN}/containerd.pid")"; then
    local id
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -a -s SIGKILL "${id}" >/dev/null 2>&1 || true; done
    for id in $(ctr_ tasks ls -q 2>/dev/null); do
      for _ in $(seq 50); do ctr_ tasks rm -f "${id}" >/dev/null 2>&1 && break; sleep 0.1; done
    done
    for id in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers rm "${id}" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  # The nat rules TestRealNodeDeployment routes Services' cluster IPs with, should it have been
  # killed before removing them.
  if iptables -w -t nat -S SIDECARSET-E2E >/dev/null 2>&1; then
    iptables -w -t nat -D PREROUTING -j SIDECARSET-E2E 2>/dev/null || true
    iptables -w -t nat -D OUTPUT -j SIDECARSET-E2E 2>/dev/null || true
    iptables -w -t nat -F SIDECARSET-E2E && iptables -w -t nat -X SIDECARSET-E2E || log "could not remove the nat chain SIDECARSET-E2E"
  fi
  local m
  # Deepest first; lazily if still busy.
  awk -v p="${NODE}/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
    umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null || log "cannot unmount ${m}"
  done
  rm -rf "${NODE}/containerd/root" "${NODE}/containerd/state" "${NODE}/containerd/runc" "${NODE}/cni/ipam" "${NODE}/kubelet/root" \
    2>/dev/null || log "could not remove all of ${NODE}"
}

up() {
  tools
  mkdir -p "${RUN}" "${LOGS}"
  certs
  start_kube
  start_kwok
  start_server
  register
  if [[ "${REAL_NODE:-}" == 1 ]]; then
    if [[ "$(id -u)" == 0 ]]; then node_up; else log "REAL_NODE=1 but not root: no real node"; fi
  fi
  log "ready"
  echo "export KUBECONFIG=${KUBECONFIG_FILE}"
  echo "kubectl: ${KUBECTL}"
}

down() {
  node_down
  for p in sidecarset-apiserver-2 sidecarset-apiserver server-etcd kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop "$p"
  done
  if [[ "${1:-}" == "--purge" ]]; then rm -rf "${STATE}"; fi
}

run() {
  up
  kc apply -f "${ROOT}/artifacts/examples/01-test-sidecarset.yaml"
  kc get sidecarsets
  log "cluster is up; use: export KUBECONFIG=${KUBECONFIG_FILE} and ${KUBECTL}; Ctrl-C stops it"
  trap 'down; exit 0' INT TERM
  while true; do sleep 3600 & wait $!; done
}

case "${1:-run}" in
  up) up ;;
  down) shift; down "${1:-}" ;;
  run) run ;;
  restart-server) tools; stop sidecarset-apiserver; start_server; register ;;
  restart-server-etcd) tools; stop server-etcd; start_server; register ;;
  stop-server) stop sidecarset-apiserver; stop server-etcd ;;
  stop-server-etcd) stop server-etcd ;;
  start-server-etcd) tools; start_server_etcd ;;
  snapshot-server-etcd) snapshot_server_etcd "${2:-}" ;;
  restore-server-etcd) tools; restore_server_etcd "${2:-}" ;;
  start-server) tools; start_server; register ;;
  start-server-alone) tools; start_server_process ;;
  restart-kwok) tools; stop kwok; start_kwok ;;
  build-server) build_server ;;
  build-etcd-tools) etcd_tools ;;
  restart-kube-apiserver) tools; stop kube-apiserver; start_kube_apiserver ;;
  stop-kube-apiserver) stop kube-apiserver ;;
  start-kube-apiserver) tools; start_kube_apiserver ;;
  start-replica) tools; start_replica ;;
  stop-replica) stop sidecarset-apiserver-2 ;;
  env) echo "export KUBECONFIG=${KUBECONFIG_FILE}" ;;
  node-up) tools; node_up ;;
  node-down) node_down ;;
  node-deploy-images) tools; node_deploy_images ;;
  *) echo "usage: $0 [run|up|down [--purge]|restart-server|stop-kube-apiserver|start-kube-apiserver|restart-kube-apiserver|restart-server-etcd|stop-server|start-server|stop-server-etcd|start-server-etcd|snapshot-server-etcd FILE|restore-server-etcd FILE|restart-kwok|build-server|build-etcd-tools|start-replica|stop-replica|node-up|node-down|node-deploy-images|env]" >&2; exit 2 ;;
esac
