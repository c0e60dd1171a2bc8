#!/usr/bin/env bash
# Certificates for artifacts/deploy without cert-manager, with openssl only.
#
#   hack/deploy-certs.sh [--force] [OUT_DIR]     (OUT_DIR default: artifacts/deploy/certs, git-ignored)
#
# Writes two CAs and the certificates the default kustomization (artifacts/deploy) turns into
# kubernetes.io/tls Secrets (tls.crt, tls.key, ca.crt):
#   etcd-ca.{crt,key}          the CA etcd trusts, for clients and peers
#   etcd-server.{crt,key}      sidecarset-etcd-server: etcd's client port; SANs: the 3 member names,
#                              the Service, localhost, 127.0.0.1
#   etcd-peer.{crt,key}        sidecarset-etcd-peer: between members; SANs: the 3 member names
#   etcd-client.{crt,key}      sidecarset-etcd-client: the server's (and the backup's) etcd client
#                              certificate, CN sidecarset-apiserver, no SANs (etcd checks SANs
#                              against the client's address)
#   serving-ca.{crt,key}       the CA kube-apiserver trusts for the server (the APIServices' caBundle)
#   apiserver.{crt,key}        sidecarset-apiserver-tls: the server's serving certificate; SANs:
#                              sidecarset-apiserver.NAMESPACE.svc(.cluster.local)
#   apiservices-ca-bundle.yaml the JSON patch that sets both APIServices' caBundle
#
# Existing files are kept (a second run changes nothing); a missing certificate is issued by the
# existing CA, so deleting the leaf certificates and running again renews them. --force replaces
# everything, CAs included. NAMESPACE (default sidecarset-system) is the namespace the names are in;
# ETCD_MEMBERS (default 3) the number of etcd members named (the Helm chart's etcd.replicas).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
NAMESPACE=${NAMESPACE:-sidecarset-system}
ETCD_MEMBERS=${ETCD_MEMBERS:-3}
[[ "${ETCD_MEMBERS}" =~ ^[1-9][0-9]*$ ]] || { echo "deploy-certs: ETCD_MEMBERS=${ETCD_MEMBERS} is not a number of members" >&2; exit 2; }
CA_DAYS=${CA_DAYS:-3650}
CERT_DAYS=${CERT_DAYS:-730}
FORCE=0
OUT=""
for arg in "$@"; do
  case "${arg}" in
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "deploy-certs: unknown flag ${arg}" >&2; exit 2 ;;
    *) [[ -z "${OUT}" ]] || { echo "deploy-certs: one OUT_DIR only" >&2; exit 2; }; OUT=${arg} ;;
  esac
done
OUT=${OUT:-${ROOT}/artifacts/deploy/certs}

command -v openssl >/dev/null 2>&1 || {
  echo "deploy-certs: openssl is required (e.g. apt-get install openssl) and was not found in PATH" >&2
  exit 1
}

log() { echo "deploy-certs: $*" >&2; }

mkdir -p "${OUT}"
chmod 700 "${OUT}"
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT
if [[ "${FORCE}" == 1 ]]; then
  rm -f "${OUT}"/{etcd-ca,etcd-server,etcd-peer,etcd-client,serving-ca,apiserver}.{crt,key} "${OUT}/apiservices-ca-bundle.yaml"
fi

key() { (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null); }
serial() { echo "0x$(openssl rand -hex 16)"; }

# ca NAME CN: a self-signed CA, unless NAME.crt exists (cert reissues what a new CA did not sign).
ca() {
  local name=$1 cn=$2
  [[ -s "${OUT}/${name}.crt" && -s "${OUT}/${name}.key" ]] && return 0
  log "CA ${name} (${cn})"
  key "${OUT}/${name}.key"
  cat >"${TMP}/ca.cnf" <<CNF
[req]
distinguished_name = dn
prompt = no
x509_extensions = ext
[dn]
CN = ${cn}
[ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
CNF
  openssl req -x509 -new -key "${OUT}/${name}.key" -config "${TMP}/ca.cnf" -days "${CA_DAYS}" -sha256 \
    -set_serial "$(serial)" -out "${OUT}/${name}.crt"
}

# cert NAME CA CN EXTENDED_KEY_USAGE [SANS]: a certificate signed by CA, unless NAME.crt exists and
# was signed by this CA.
cert() {
  local name=$1 ca=$2 cn=$3 eku=$4 sans=${5:-}
  if [[ -s "${OUT}/${name}.crt" && -s "${OUT}/${name}.key" ]] &&
    openssl verify -CAfile "${OUT}/${ca}.crt" "${OUT}/${name}.crt" >/dev/null 2>&1; then
    return 0
  fi
  log "certificate ${name} (CN ${cn}${sans:+, ${sans}})"
  key "${OUT}/${name}.key"
  {
    echo "basicConstraints = critical,CA:FALSE"
    echo "keyUsage = critical,digitalSignature"
    echo "extendedKeyUsage = ${eku}"
    echo "authorityKeyIdentifier = keyid"
    [[ -z "${sans}" ]] || echo "subjectAltName = ${sans}"
  } >"${TMP}/${name}.ext"
  openssl req -new -key "${OUT}/${name}.key" -subj "/CN=${cn}" -out "${TMP}/${name}.csr"
  openssl x509 -req -in "${TMP}/${name}.csr" -CA "${OUT}/${ca}.crt" -CAkey "${OUT}/${ca}.key" \
    -set_serial "$(serial)" -days "${CERT_DAYS}" -sha256 -extfile "${TMP}/${name}.ext" \
    -out "${OUT}/${name}.crt" 2>/dev/null
}

members=""
for ((i = 0; i < ETCD_MEMBERS; i++)); do members+="DNS:sidecarset-etcd-${i}.sidecarset-etcd.${NAMESPACE}.svc,"; done
members=${members%,}

ca etcd-ca "sidecarset-etcd-ca"
cert etcd-server etcd-ca sidecarset-etcd serverAuth,clientAuth \
  "${members},DNS:sidecarset-etcd,DNS:sidecarset-etcd.${NAMESPACE},DNS:sidecarset-etcd.${NAMESPACE}.svc,DNS:localhost,IP:127.0.0.1"
cert etcd-peer etcd-ca sidecarset-etcd-peer serverAuth,clientAuth "${members}"
cert etcd-client etcd-ca sidecarset-apiserver clientAuth

ca serving-ca "sidecarset-apiserver-ca"
cert apiserver serving-ca "sidecarset-apiserver.${NAMESPACE}.svc" serverAuth \
  "DNS:sidecarset-apiserver.${NAMESPACE}.svc,DNS:sidecarset-apiserver.${NAMESPACE}.svc.cluster.local"

last="sidecarset-etcd-$((ETCD_MEMBERS - 1)).sidecarset-etcd.${NAMESPACE}.svc"
for want in "apiserver DNS:sidecarset-apiserver.${NAMESPACE}.svc" "etcd-server DNS:sidecarset-etcd.${NAMESPACE}.svc" \
  "etcd-server DNS:${last}" "etcd-peer DNS:${last}"; do
  if ! openssl x509 -in "${OUT}/${want%% *}.crt" -noout -ext subjectAltName 2>/dev/null | grep -qF "${want#* }"; then
    log "${OUT}/${want%% *}.crt has no SAN ${want#* } (another NAMESPACE or ETCD_MEMBERS?): run again with --force"
    exit 1
  fi
done

cat >"${OUT}/apiservices-ca-bundle.yaml" <<YAML
# Written by hack/deploy-certs.sh: the CA of the server's serving certificate, for both APIServices.
- op: replace
  path: /spec/caBundle
  value: $(openssl base64 -A <"${OUT}/serving-ca.crt")
YAML
log "certificates in ${OUT}"
