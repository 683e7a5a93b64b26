{{- define "shutter-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "shutter-operator.labels" -}}
app.kubernetes.io/name: shutter-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "shutter-operator.selectorLabels" -}}
app.kubernetes.io/name: shutter-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "shutter-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "shutter-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
