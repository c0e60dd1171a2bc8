#!/usr/bin/env bash
# Prints the Helm chart charts/sidecarset-apiserver rendered (helm template, release "sidecarset")
# with the certificates of hack/deploy-certs.sh, for a check against a cluster:
#
#   hack/chart-template.sh [HELM TEMPLATE FLAGS...] | kubectl apply --dry-run=server -f -
#
# CERT_DIR (default artifacts/deploy/certs, git-ignored) holds the certificates; hack/deploy-certs.sh
# writes them there first (it keeps existing files). Flags such as --namespace NS or
# --set certificates.source=cert-manager are passed on. helm is built by hack/install-helm.sh
# the first time.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
CERT_DIR=${CERT_DIR:-${ROOT}/artifacts/deploy/certs}
HELM=$("${ROOT}/hack/install-helm.sh" | tail -n 1)
"${ROOT}/hack/deploy-certs.sh" "${CERT_DIR}"

# The chart's certificate values and the files of hack/deploy-certs.sh (test/chart.CertFiles).
files=(--set certificates.source=secrets)
for v in etcdCA=etcd-ca.crt etcdServer.cert=etcd-server.crt etcdServer.key=etcd-server.key \
  etcdPeer.cert=etcd-peer.crt etcdPeer.key=etcd-peer.key etcdClient.cert=etcd-client.crt \
  etcdClient.key=etcd-client.key servingCA=serving-ca.crt apiserver.cert=apiserver.crt \
  apiserver.key=apiserver.key; do
  files+=(--set-file "certificates.${v%%=*}=${CERT_DIR}/${v#*=}")
done
exec "${HELM}" template sidecarset "${ROOT}/charts/sidecarset-apiserver" "${files[@]}" "$@"
