{{/* Labels on every object of the release. */}}
{{- define "muster.labels" -}}
app.kubernetes.io/name: muster
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The selector of muster's pods. */}}
{{- define "muster.selector" -}}
app.kubernetes.io/name: muster
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The Configuration file: the config values, with apiVersion, kind, and the release namespace as muster's namespace and the Lease's. */}}
{{- define "muster.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $le := get $cfg "leaderElection" | default dict -}}
{{- if not (hasKey $le "leaseNamespace") -}}
{{- $_ := set $le "leaseNamespace" .Release.Namespace -}}
{{- end -}}
{{- $_ := set $cfg "leaderElection" $le -}}
{{- if not (hasKey $cfg "namespace") -}}
{{- $_ := set $cfg "namespace" .Release.Namespace -}}
{{- end -}}
{{- $_ := set $cfg "apiVersion" "muster.dev/v1alpha1" -}}
{{- $_ := set $cfg "kind" "Configuration" -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* A CRD from files/crd, kept on uninstall. */}}
{{- define "muster.crd" -}}
{{- $crd := .Files.Get .file | fromYaml -}}
{{- $_ := set $crd.metadata "annotations" (merge (dict "helm.sh/resource-policy" "keep") ($crd.metadata.annotations | default dict)) -}}
{{- $_ := set $crd.metadata "labels" (fromYaml (include "muster.labels" .root)) -}}
{{- toYaml $crd -}}
{{- end -}}
