#!/usr/bin/env bash
# Builds helm from the Go module proxy into _output/tools/helm-<version>/bin/helm, once: the module
# hack/tools/helm pins it (its own module, so that helm's dependency versions never fight with the
# main module's or with hack/tools' k8s.io/kubernetes). The version is the one of its go.mod.
# Output: the helm binary's path on the last line (the chart test and `make chart` read it with tail).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
MOD="${ROOT}/hack/tools/helm"
GO=${GO:-go}
# helm.sh/helm/v3 vX.Y.Z, and the client-go helm is built with (as helm's own Makefile does: its
# minor is the default Kubernetes version of `helm template` and of `helm lint`'s deprecation check).
modversion() { awk -v m="$1" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m { print $2; exit }' "${MOD}/go.mod"; }
HELM_VERSION=$(modversion helm.sh/helm/v3)
CLIENT_GO=$(modversion k8s.io/client-go)
[[ -n "${HELM_VERSION}" && -n "${CLIENT_GO}" ]] || {
  echo "install-helm: no helm.sh/helm/v3 or k8s.io/client-go version in ${MOD}/go.mod" >&2
  exit 1
}
K8S_MINOR=$(echo "${CLIENT_GO}" | cut -d. -f2)
HELM="${ROOT}/_output/tools/helm-${HELM_VERSION}/bin/helm"

if [[ ! -x "${HELM}" ]]; then
  echo "building helm.sh/helm/v3/cmd/helm ${HELM_VERSION} (a few minutes the first time)..." >&2
  mkdir -p "$(dirname "${HELM}")"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
  ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${K8S_MINOR}"
  done
  # A temporary name of this process: _output/tools may be shared with other work trees.
  (cd "${MOD}" && CGO_ENABLED=0 "${GO}" build -trimpath -ldflags "${ldflags}" -o "${HELM}.tmp.$$" helm.sh/helm/v3/cmd/helm)
  mv "${HELM}.tmp.$$" "${HELM}"
fi
echo "${HELM}"
