#!/usr/bin/env bash
# Builds the local cluster's binaries from the Go module proxy into _output/tools/<version>/bin,
# once: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (hack/tools module).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
KUBE_VERSION=v1.36.3
BIN="${ROOT}/_output/tools/k8s-${KUBE_VERSION}/bin"
mkdir -p "${BIN}"

missing=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
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
[[ -x "${BIN}/etcd" ]] || go build -o "${BIN}/etcd" ./etcd
echo "${BIN}"
