#!/usr/bin/env bash
# Builds the local cluster's binaries from the Go module proxy into _output/tools/<version>/bin,
# once: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet (hack/tools module)
# and kwok (the separate module hack/tools/kwok, so that kwok's dependency versions never fight
# with k8s.io/kubernetes) into _output/tools/kwok-<version>/bin.
# Output: the kwok binary on the line before last, the k8s bin dir on the last line
# (hack/local-up.sh reads them with tail).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
KUBE_VERSION=v1.36.3
KWOK_VERSION=v0.8.0 # keep in sync with hack/tools/kwok/go.mod
BIN="${ROOT}/_output/tools/k8s-${KUBE_VERSION}/bin"
KWOK="${ROOT}/_output/tools/kwok-${KWOK_VERSION}/bin/kwok"
mkdir -p "${BIN}" "$(dirname "${KWOK}")"

missing=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet; do
  [[ -x "${BIN}/${b}" ]] || missing+=("k8s.io/kubernetes/cmd/${b}")
done

cd "${ROOT}/hack/tools"
if ((${#missing[@]})); then
  echo "building ${missing[*]} ${KUBE_VERSION} (about 6-10 minutes the first time)..." >&2
  minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  go build -ldflags "${ldflags}" -o "${BIN}/" "${missing[@]}"
fi
# The local etcd is this folder's small program: rebuilt when its source is newer than the binary.
if [[ ! -x "${BIN}/etcd" || etcd/main.go -nt "${BIN}/etcd" ]]; then
  go build -o "${BIN}/etcd.tmp" ./etcd && mv "${BIN}/etcd.tmp" "${BIN}/etcd"
fi

if [[ ! -x "${KWOK}" ]]; then
  echo "building sigs.k8s.io/kwok/cmd/kwok ${KWOK_VERSION} (about 2-3 minutes the first time)..." >&2
  (cd "${ROOT}/hack/tools/kwok" &&
    go build -o "${KWOK}.tmp" sigs.k8s.io/kwok/cmd/kwok)
  mv "${KWOK}.tmp" "${KWOK}"
fi
echo "${KWOK}"
echo "${BIN}"
