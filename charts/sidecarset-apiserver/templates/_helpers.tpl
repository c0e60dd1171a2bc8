{{/*
The recommended labels (app.kubernetes.io/*) and Helm's, on every object's metadata; selectors
keep the fixed app label alone (selectors are immutable).
*/}}
{{- define "sidecarset.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: sidecarset-apiserver
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The labels of an object of one component: dict "root" . "component" "etcd". */}}
{{- define "sidecarset.componentLabels" -}}
{{ include "sidecarset.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
A pod template's metadata: the selector's app label, the recommended labels of its component and
the user's labels and annotations: dict "root" . "app" "sidecarset-etcd" "component" "etcd"
"labels" .Values.etcd.podLabels "annotations" .Values.etcd.podAnnotations.
*/}}
{{- define "sidecarset.podMetadata" -}}
labels:
  {{- with .labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  app: {{ .app }}
  app.kubernetes.io/name: {{ .root.Chart.Name }}
  app.kubernetes.io/instance: {{ .root.Release.Name }}
  app.kubernetes.io/component: {{ .component }}
{{- with .annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
A pod spec's scheduling and pull secrets: dict "root" . "values" .Values.etcd (nodeSelector,
tolerations, affinity, topologySpreadConstraints), with "priority" true the priorityClass; with
"spread" APP and no affinity given, pods labelled app=APP preferably on different nodes.
*/}}
{{- define "sidecarset.podScheduling" -}}
{{- if .priority }}
{{- with include "sidecarset.priorityClassName" .root }}
priorityClassName: {{ . }}
{{- end }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
- name: {{ if kindIs "string" . }}{{ . }}{{ else }}{{ .name }}{{ end }}
{{- end }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $affinity := .values.affinity }}
{{- if and (not $affinity) .spread }}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (dict "app" .spread)) }}
{{- $affinity = dict "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) }}
{{- end }}
{{- with $affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The namespace of every namespaced object: namespaceOverride, or the release's. */}}
{{- define "sidecarset.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace -}}
{{- end -}}

{{/* metadata.namespace and metadata.labels of a namespaced object without labels of its own. */}}
{{- define "sidecarset.namespaced" -}}
namespace: {{ include "sidecarset.namespace" . }}
labels:
  {{- include "sidecarset.labels" . | nindent 2 }}
{{- end -}}

{{/* metadata.annotations that keep an object on uninstall (keepOnUninstall), or nothing. */}}
{{- define "sidecarset.keep" -}}
{{- if .Values.keepOnUninstall -}}
annotations:
  helm.sh/resource-policy: keep
{{- end }}
{{- end -}}

{{/* An image reference: [registry/]repository, then @digest or :tag (tag default: default). */}}
{{- define "sidecarset.imageRef" -}}
{{- $name := .image.repository -}}
{{- with .image.registry }}{{ $name = printf "%s/%s" . $name }}{{ end -}}
{{- if .image.digest -}}
{{ $name }}@{{ .image.digest }}
{{- else -}}
{{ $name }}:{{ .image.tag | default .default }}
{{- end -}}
{{- end -}}

{{/* The image of the server's container. */}}
{{- define "sidecarset.image" -}}
{{ include "sidecarset.imageRef" (dict "image" .Values.image "default" .Chart.AppVersion) }}
{{- end -}}

{{- define "sidecarset.etcdImage" -}}
{{ include "sidecarset.imageRef" (dict "image" .Values.etcd.image "default" "") }}
{{- end -}}

{{/*
The name of a certificate's Secret: certificates.existingSecrets' with that source, the chart's
own otherwise: dict "root" . "key" "etcdClient".
*/}}
{{- define "sidecarset.secretName" -}}
{{- if eq (include "sidecarset.certificateSource" .root) "existingSecrets" -}}
{{- required (printf "certificates.existingSecrets.%s: the name of a Secret" .key) (get .root.Values.certificates.existingSecrets .key) -}}
{{- else -}}
{{- get (dict "etcdServer" "sidecarset-etcd-server" "etcdPeer" "sidecarset-etcd-peer" "etcdClient" "sidecarset-etcd-client" "apiserver" "sidecarset-apiserver-tls") .key -}}
{{- end -}}
{{- end -}}

{{/*
The namespaces the application webhook never sends, as a JSON list: kube-system (its own webhook),
the server's, and injection.excludedNamespaces.
*/}}
{{- define "sidecarset.webhookExcluded" -}}
{{- $ns := list "kube-system" (include "sidecarset.namespace" .) -}}
{{- range .Values.injection.excludedNamespaces }}{{ if not (has . $ns) }}{{ $ns = append $ns . }}{{ end }}{{ end -}}
{{- toJson $ns -}}
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

{{/*
certificates.source, checked; with self-managed (the default) no PEM file of the secrets source may
be given: an install made with files keeps certificates.source=secrets.
*/}}
{{- define "sidecarset.certificateSource" -}}
{{- $c := .Values.certificates -}}
{{- $s := $c.source -}}
{{- if not (has $s (list "self-managed" "secrets" "cert-manager" "existingSecrets")) -}}
{{- fail (printf "certificates.source is %q: self-managed, secrets, cert-manager or existingSecrets" $s) -}}
{{- end -}}
{{- if and (eq $s "self-managed") (or $c.etcdCA $c.servingCA $c.etcdServer.cert $c.etcdPeer.cert $c.etcdClient.cert $c.apiserver.cert) -}}
{{- fail "certificates.source is self-managed, yet certificate files are given (certificates.etcdCA, ...): set certificates.source=secrets to use them (self-managed is the default)" -}}
{{- end -}}
{{- $s -}}
{{- end -}}

{{/*
securePort, checked: with hostNetwork it is a port of the node, which must not be one the node's
own components listen on (the kubelet's, kube-proxy's, the control plane's, ssh and DNS) nor
below 1024 (the non-root server cannot bind it in the node's network namespace). 8443 when the
values have none (an upgrade with --reuse-values of a release installed before the value existed).
*/}}
{{- define "sidecarset.securePort" -}}
{{- $port := int (.Values.securePort | default 8443) -}}
{{- if .Values.hostNetwork -}}
{{- $taken := dict "22" "ssh's" "53" "DNS's" "2379" "the control plane's etcd's" "2380" "the control plane's etcd's" "6443" "kube-apiserver's" "10248" "the kubelet's health" "10249" "kube-proxy's metrics" "10250" "the kubelet's" "10255" "the kubelet's read-only" "10256" "kube-proxy's health" "10257" "kube-controller-manager's" "10259" "kube-scheduler's" -}}
{{- with get $taken (toString $port) -}}
{{- fail (printf "securePort is %d with hostNetwork=true: that port of the node is %s port; pick one nothing on the nodes listens on (docs/managed-clusters.md)" $port .) -}}
{{- end -}}
{{- if lt $port 1024 -}}
{{- fail (printf "securePort is %d with hostNetwork=true: the server runs as non-root and cannot bind a port below 1024 in the node's network namespace; pick one from 1024 up that nothing on the nodes listens on (docs/managed-clusters.md)" $port) -}}
{{- end -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/*
A securityContext: the value when given (it replaces the chart's whole: what it leaves out is not
rendered), else the chart's default of that kind: dict "value" .Values.podSecurityContext "kind"
"Pod" (sidecarset.defaultPodSecurityContext) or "Container".
*/}}
{{- define "sidecarset.securityContext" -}}
{{- if .value -}}
{{- toYaml .value -}}
{{- else -}}
{{- include (printf "sidecarset.default%sSecurityContext" .kind) . -}}
{{- end -}}
{{- end -}}

{{/* The chart's pod securityContext: non-root, uid, gid and fsGroup 65532, RuntimeDefault seccomp. */}}
{{- define "sidecarset.defaultPodSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{/* The chart's container securityContext: no privilege escalation, a read-only root, no capability. */}}
{{- define "sidecarset.defaultContainerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
{{- end -}}

{{/*
The PriorityClass the server's and etcd's pods use: priorityClass.name, or sidecarset-critical
when the chart creates one without a name; empty: none.
*/}}
{{- define "sidecarset.priorityClassName" -}}
{{- if .Values.priorityClass.name -}}
{{- .Values.priorityClass.name -}}
{{- else if .Values.priorityClass.create -}}
sidecarset-critical
{{- end -}}
{{- end -}}

{{/*
The flags of the self-managed certificates as list items, each name with a prefix: the number of
etcd members, the lifetimes and the check interval (`certificates ensure` takes them without
prefix, the server with certificates-): dict "root" . "prefix" "certificates-".
*/}}
{{- define "sidecarset.certificateFlags" -}}
{{- $m := .root.Values.certificates.selfManaged -}}
- --{{ .prefix }}etcd-members={{ include "sidecarset.etcdMembers" .root }}
- --{{ .prefix }}ca-lifetime={{ $m.caDuration }}
- --{{ .prefix }}lifetime={{ $m.duration }}
- --{{ .prefix }}check-interval={{ $m.checkInterval }}
{{- end -}}

{{/*
A volume with a ServiceAccount token for the containers that keep the self-managed certificates
alone (the pod mounts none), where client-go's in-cluster configuration reads it.
*/}}
{{- define "sidecarset.tokenVolume" -}}
- name: kube-api-access
  projected:
    defaultMode: 0444
    sources:
    - serviceAccountToken: {path: token, expirationSeconds: 3607}
    - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
    - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
{{- end -}}

{{/* The Secrets of the self-managed certificates, as a JSON list. */}}
{{- define "sidecarset.certificateSecrets" -}}
{{- toJson (list "sidecarset-etcd-ca" "sidecarset-serving-ca" "sidecarset-etcd-server" "sidecarset-etcd-peer" "sidecarset-etcd-client" "sidecarset-apiserver-tls") -}}
{{- end -}}

{{/*
The duration, renewBefore and issuerRef of a cert-manager leaf Certificate's spec: dict "values"
.Values.certificates.certManager "issuer" (dict "kind" "ClusterIssuer" "name" "corp" "group" "cert-manager.io").
*/}}
{{- define "sidecarset.certManagerLeaf" -}}
duration: {{ .values.duration }}
{{- with .values.renewBefore }}
renewBefore: {{ . }}
{{- end }}
issuerRef:
  kind: {{ .issuer.kind }}
  name: {{ .issuer.name }}
  {{- with .issuer.group }}
  group: {{ . }}
  {{- end }}
{{- end -}}
