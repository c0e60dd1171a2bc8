#!/usr/bin/env bash
# Renders the kustomization artifacts/deploy from the Helm chart charts/sidecarset-apiserver, its
# one source: each template of the chart becomes the file of the same name in
# artifacts/deploy/base (with base/kustomization.yaml listing them), and the chart's cert-manager
# objects become artifacts/deploy/overlays/cert-manager/certificates.yaml. The rest of
# artifacts/deploy (the default kustomization's Secrets, the overlays' patches, static/ and
# maintenance/) is written by hand.
#
#   hack/render-deploy.sh            write the files
#   hack/render-deploy.sh --verify   render into a temporary folder and fail if the files differ
#                                    (make verify)
#
# The base holds everything but certificates, in namespace NAMESPACE (default sidecarset-system,
# the server's own namespace, where the local cluster of hack/local-up.sh runs it too; never
# OpenKruise's kruise-system, which OpenKruise's release owns during a migration and which `kubectl
# delete -k` would delete with everything in it), with the Namespace itself, as the chart
# renders it with createNamespace=true and certificates.source=existingSecrets: the Secrets come
# from the default kustomization's secretGenerator (hack/deploy-certs.sh) or from cert-manager, and
# the APIServices' caBundle is the placeholder CA_BUNDLE their patches replace. helm is built by
# hack/install-helm.sh the first time.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
CHART="${ROOT}/charts/sidecarset-apiserver"
DEPLOY="${ROOT}/artifacts/deploy"
NAMESPACE=${NAMESPACE:-sidecarset-system}
RELEASE=sidecarset
# The base's files in kustomization order: cluster-wide prerequisites first.
ORDER=(namespace priority rbac user-roles etcd etcd-backup apiserver apiservices webhook server-guard)

verify=false
case "${1:-}" in
  --verify) verify=true ;;
  "") ;;
  *) echo "usage: hack/render-deploy.sh [--verify]" >&2; exit 2 ;;
esac

HELM=$("${ROOT}/hack/install-helm.sh" | tail -n 1)
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT

header() {
  echo "# Rendered by hack/render-deploy.sh from charts/sidecarset-apiserver/$1:"
  echo "# edit the chart and run the script, never this file."
}

# split DIR: helm template's output on stdin, one file per template (# Source: CHART/templates/F).
split() {
  awk -v dir="$1" '
    function flush() {
      if (file != "" && doc != "") {
        if (seen[file]++) printf "---\n" >> (dir "/" file)
        printf "%s", doc >> (dir "/" file)
      }
      doc = ""
    }
    /^---$/ { flush(); file = ""; next }
    /^# Source: / { n = split($3, p, "/"); file = p[n]; next }
    { doc = doc $0 "\n" }
    END { flush() }
  '
}

render() {
  local out=$1 f
  mkdir -p "${out}/base" "${out}/overlays/cert-manager" "${TMP}/split"
  "${HELM}" template "${RELEASE}" "${CHART}" --namespace "${NAMESPACE}" \
    --set createNamespace=true --set certificates.source=existingSecrets \
    --set certificates.existingSecrets.caBundle=CA_BUNDLE | split "${TMP}/split"
  for f in "${TMP}/split"/*; do
    local name
    name=$(basename "${f}" .yaml)
    if [[ ! " ${ORDER[*]} " =~ " ${name} " ]]; then
      echo "render-deploy: the chart renders templates/${name}.yaml, which ORDER does not list" >&2
      exit 1
    fi
    { header "templates/${name}.yaml"; cat "${f}"; } >"${out}/base/${name}.yaml"
  done
  {
    echo "# Everything but certificates: artifacts/deploy (certificates from hack/deploy-certs.sh) or"
    echo "# overlays/cert-manager add them."
    header "templates"
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources:"
    for f in "${ORDER[@]}"; do
      [[ -f "${out}/base/${f}.yaml" ]] && echo "- ${f}.yaml"
    done
  } >"${out}/base/kustomization.yaml"
  {
    header "templates/certificates.yaml"
    "${HELM}" template "${RELEASE}" "${CHART}" --namespace "${NAMESPACE}" \
      --set certificates.source=cert-manager --show-only templates/certificates.yaml | sed '/^---$/{1d};/^# Source: /d'
  } >"${out}/overlays/cert-manager/certificates.yaml"
}

render "${TMP}/out"
if ${verify}; then
  status=0
  diff -ru "${DEPLOY}/base" "${TMP}/out/base" || status=1
  diff -u "${DEPLOY}/overlays/cert-manager/certificates.yaml" "${TMP}/out/overlays/cert-manager/certificates.yaml" || status=1
  if [[ ${status} -ne 0 ]]; then
    echo "artifacts/deploy is not what the chart renders: run hack/render-deploy.sh" >&2
    exit 1
  fi
  exit 0
fi
rm -f "${DEPLOY}"/base/*.yaml
cp "${TMP}/out/base"/*.yaml "${DEPLOY}/base/"
cp "${TMP}/out/overlays/cert-manager/certificates.yaml" "${DEPLOY}/overlays/cert-manager/certificates.yaml"
echo "rendered artifacts/deploy/base and artifacts/deploy/overlays/cert-manager/certificates.yaml" >&2
