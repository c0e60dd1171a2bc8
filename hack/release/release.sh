#!/usr/bin/env bash
# Release artifacts without a container daemon (docs/release.md):
#   hack/release/release.sh          `make release`: into _output/release (RELEASE_DIR), the server's
#                                    image index for linux/amd64 and linux/arm64 (oci/ and
#                                    sidecarset-apiserver-oci.tar), the packaged chart, the plugin's
#                                    archives for linux and darwin on amd64 and arm64, their krew
#                                    manifest sidecarset.yaml and SHA256SUMS; then checks them
#   hack/release/release.sh image    `make image`: one platform's image (IMAGE_ARCH, named IMAGE_TAG)
#                                    in _output/image/oci and _output/image/sidecarset-apiserver.tar
# The version is hack/version.sh's (VERSION overrides it); the chart's version is the version
# without its v, its appVersion the version (the image's tag). RELEASE_URL is where the plugin's
# archives are downloaded from (the krew manifest's uri base; default the GitHub release of the
# version at SOURCE_URL). The image and archives are written by this folder's module (its own, so
# that go-containerregistry stays out of the server's dependencies).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "${ROOT}"
GO=${GO:-go}
SOURCE_URL=${SOURCE_URL:-https://github.com/sidecarset/apiserver}
LICENSES=Apache-2.0

# The version, commit and commit time stamped into the binaries are the image's labels too.
LDFLAGS=$(VERSION=${VERSION:-} hack/version.sh)
field() { sed -n "s|.*/pkg/version\.$1=\([^ ]*\).*|\1|p" <<<"${LDFLAGS}"; }
VERSION=$(field gitVersion)
REVISION=$(field gitCommit)
CREATED=$(field buildDate)
[[ -n "${VERSION}" && -n "${REVISION}" && -n "${CREATED}" ]] || { echo "release: no version in: ${LDFLAGS}" >&2; exit 1; }

# build GOOS GOARCH PKG OUT: a static, trimmed binary with the version's linker flags.
build() {
  echo "building $3 for $1/$2" >&2
  CGO_ENABLED=0 GOOS=$1 GOARCH=$2 "${GO}" build -trimpath -ldflags "-s -w ${LDFLAGS}" -o "$4" "$3"
}

image() {
  local arch=${IMAGE_ARCH:-$("${GO}" env GOARCH)} out="${ROOT}/_output/image"
  mkdir -p "${out}"
  build linux "${arch}" ./cmd/apiserver "${out}/sidecarset-apiserver"
  (cd hack/release && "${GO}" run ./cmd/image -binary "${out}/sidecarset-apiserver" -arch "${arch}" -ref "${IMAGE_TAG:-latest}" \
    -version "${VERSION}" -revision "${REVISION}" -created "${CREATED}" -source "${SOURCE_URL}" -licenses "${LICENSES}" \
    -title sidecarset-apiserver -layout "${out}/oci" -archive "${out}/sidecarset-apiserver.tar")
}

release() {
  local out=${RELEASE_DIR:-${ROOT}/_output/release} bin="${ROOT}/_output/release-build" t0=${SECONDS} helm p args=()
  local url=${RELEASE_URL:-${SOURCE_URL}/releases/download/${VERSION}}
  rm -rf "${out}" "${bin}"
  mkdir -p "${out}" "${bin}"
  for p in linux/amd64 linux/arm64; do
    build "${p%/*}" "${p#*/}" ./cmd/apiserver "${bin}/sidecarset-apiserver-${p/\//-}"
    args+=(-server "${p}=${bin}/sidecarset-apiserver-${p/\//-}")
  done
  for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
    build "${p%/*}" "${p#*/}" ./cmd/kubectl-sidecarset "${bin}/kubectl-sidecarset-${p/\//-}"
    args+=(-plugin "${p}=${bin}/kubectl-sidecarset-${p/\//-}")
  done
  helm=$(GO="${GO}" hack/install-helm.sh | tail -n 1)
  "${helm}" package charts/sidecarset-apiserver --version "${VERSION#v}" --app-version "${VERSION}" -d "${out}" >&2
  (cd hack/release && "${GO}" run . -dir "${out}" -version "${VERSION}" -revision "${REVISION}" -created "${CREATED}" \
    -source "${SOURCE_URL}" -licenses "${LICENSES}" -license "${ROOT}/LICENSE" -url "${url}" "${args[@]}")
  echo "release ${VERSION} in ${out} ($(du -sh "${out}" | cut -f1), $((SECONDS - t0)) s):"
  (cd "${out}" && ls -l --time-style=+ | tail -n +2 | awk '{ print "  " $5 "\t" $NF }')
}

case "${1:-release}" in
  release) release ;;
  image) image ;;
  *) echo "usage: $0 [release|image]" >&2; exit 2 ;;
esac
