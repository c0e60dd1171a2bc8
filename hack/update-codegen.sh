#!/usr/bin/env bash
# Regenerates deepcopy, conversion, defaults, OpenAPI, clientset, listers, informers and apply
# configurations from the types in pkg/apis. hack/verify-codegen.sh checks the result is committed.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "${SCRIPT_ROOT}"
CODEGEN_PKG=${CODEGEN_PKG:-$(go list -m -f '{{.Dir}}' k8s.io/code-generator)}
THIS_PKG="github.com/sidecarset/apiserver"
BOILERPLATE="${SCRIPT_ROOT}/hack/boilerplate.go.txt"
REPORT_MODE=${REPORT_MODE:---update-report}

source "${CODEGEN_PKG}/kube_codegen.sh"
# core/v1 is an OpenAPI input (SidecarContainer embeds Container) but lives in the read-only module cache.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1)

# Every core/v1 type client-go has an apply configuration for: the inline corev1.Container needs them.
CLIENTGO_DIR=$(go list -m -f '{{.Dir}}' k8s.io/client-go)
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
