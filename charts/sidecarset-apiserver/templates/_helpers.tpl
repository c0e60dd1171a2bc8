{{/*
Labels Helm adds to every object's metadata (never to selectors or pod templates). The chart test
(test/chart) drops exactly these before comparing with the kustomization.
*/}}
{{- define "sidecarset.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* metadata.namespace and metadata.labels of a namespaced object without labels of its own. */}}
{{- define "sidecarset.namespaced" -}}
namespace: {{ .Values.namespace }}
labels:
  {{- include "sidecarset.labels" . | nindent 2 }}
{{- end -}}

{{/* The image of the server's container. */}}
{{- define "sidecarset.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{- define "sidecarset.etcdImage" -}}
{{ .Values.etcd.image.repository }}:{{ .Values.etcd.image.tag }}
{{- end -}}

{{/* The number of etcd members, checked: odd and at least 1. */}}
{{- define "sidecarset.etcdMembers" -}}
{{- $n := int .Values.etcd.replicas -}}
{{- if or (lt $n 1) (eq (mod $n 2) 0) -}}
{{- fail (printf "etcd.replicas is %d: an etcd cluster needs an odd number of members" $n) -}}
{{- end -}}
{{- $n -}}
{{- end -}}

{{/*
The members' DNS names, comma-separated, with the given scheme prefix and port suffix, in the form
of the pod's own $(POD_NAMESPACE) (expanded by the kubelet, as in the kustomization) or of a fixed
namespace: dict "root" . "prefix" "https://" "suffix" ":2379" "namespace" "$(POD_NAMESPACE)" "named" false.
With "named" true each is NAME=URL (etcd's --initial-cluster).
*/}}
{{- define "sidecarset.etcdURLs" -}}
{{- $urls := list -}}
{{- range $i := until (int (include "sidecarset.etcdMembers" .root)) -}}
{{- $url := printf "%ssidecarset-etcd-%d.sidecarset-etcd.%s.svc%s" $.prefix $i $.namespace $.suffix -}}
{{- if $.named }}{{ $url = printf "sidecarset-etcd-%d=%s" $i $url }}{{ end -}}
{{- $urls = append $urls $url -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}

{{/* The StorageClass of the etcd members' volumes and of the backup claim (empty: the default). */}}
{{- define "sidecarset.backupStorageClass" -}}
{{- .Values.etcd.backup.persistence.storageClassName | default .Values.etcd.persistence.storageClassName -}}
{{- end -}}

{{/*
A PEM file's content of certificates (source secrets), required, base64-encoded:
dict "value" .Values.certificates.etcdCA "name" "etcdCA" "file" "etcd-ca.crt".
*/}}
{{- define "sidecarset.pem" -}}
{{- required (printf "certificates.%s is required with certificates.source=secrets: --set-file certificates.%s=artifacts/deploy/certs/%s (written by hack/deploy-certs.sh)" .name .name .file) .value | b64enc -}}
{{- end -}}

{{/* certificates.source, checked. */}}
{{- define "sidecarset.certificateSource" -}}
{{- $s := .Values.certificates.source -}}
{{- if not (has $s (list "secrets" "cert-manager")) -}}
{{- fail (printf "certificates.source is %q: secrets or cert-manager" $s) -}}
{{- end -}}
{{- $s -}}
{{- end -}}
