#!/usr/bin/env bash
# Regenerates deepcopy, conversion, defaults, OpenAPI, clientset, listers, informers and apply
# configurations from the types in pkg/apis. hack/verify-codegen.sh checks the result is committed.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "${SCRIPT_ROOT}"

# module_dir MODULE: the source folder of a module of go.mod, downloaded into the module cache first
# (`go list -m` alone prints nothing for a module that is not there yet, as on a fresh machine).
module_dir() {
  local dir
  go mod download "$1" || { echo "cannot download $1 (go.mod's version) from the Go module proxy" >&2; return 1; }
  dir=$(go list -m -f '{{.Dir}}' "$1")
  [[ -n "${dir}" && -d "${dir}" ]] || { echo "module $1 is not in the module cache after go mod download" >&2; return 1; }
  echo "${dir}"
}

CODEGEN_PKG=${CODEGEN_PKG:-$(module_dir k8s.io/code-generator)}
[[ -f "${CODEGEN_PKG}/kube_codegen.sh" ]] || { echo "no kube_codegen.sh in '${CODEGEN_PKG}' (k8s.io/code-generator)" >&2; exit 1; }
THIS_PKG="github.com/sidecarset/apiserver"
BOILERPLATE="${SCRIPT_ROOT}/hack/boilerplate.go.txt"
REPORT_MODE=${REPORT_MODE:---update-report}

source "${CODEGEN_PKG}/kube_codegen.sh"
# core/v1 is an OpenAPI input (SidecarContainer embeds Container) but lives in the read-only module cache.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1)

# Every core/v1 type client-go has an apply configuration for: the inline corev1.Container needs them.
CLIENTGO_DIR=$(module_dir k8s.io/client-go)
AC_EXTERNALS=$(grep -ho '^type [A-Za-z0-9]*ApplyConfiguration struct' "${CLIENTGO_DIR}"/applyconfigurations/core/v1/*.go \
  | sed -E 's#^type ([A-Za-z0-9]*)ApplyConfiguration struct#k8s.io/api/core/v1.\1:k8s.io/client-go/applyconfigurations/core/v1#' \
  | sort | paste -sd, -)

kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${SCRIPT_ROOT}/pkg/apis"

kube::codegen::gen_openapi \
  --output-dir "${SCRIPT_ROOT}/pkg/generated/openapi" \
  --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
  --report-filename "${SCRIPT_ROOT}/hack/api-violations.list" ${REPORT_MODE} \
  --output-model-name-file "zz_generated.model_name.go" \
  --extra-pkgs k8s.io/api/core/v1 \
  --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
  --boilerplate "${BOILERPLATE}" \
  "${SCRIPT_ROOT}/pkg/apis"

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --applyconfig-openapi-schema <(go run "${THIS_PKG}/pkg/generated/openapi/cmd/models-schema") \
  --applyconfig-externals "${AC_EXTERNALS}" \
  --output-dir "${SCRIPT_ROOT}/pkg/generated" \
  --output-pkg "${THIS_PKG}/pkg/generated" \
  --boilerplate "${BOILERPLATE}" \
  "${SCRIPT_ROOT}/pkg/apis"
