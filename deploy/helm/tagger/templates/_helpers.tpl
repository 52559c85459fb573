{{- define "tagger.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tagger.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tagger.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tagger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tagger.serverSelectorLabels" -}}
{{ include "tagger.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "tagger.labels" -}}
{{ include "tagger.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tagger.redisUrl" -}}
{{- if .Values.redis.url -}}
{{- .Values.redis.url -}}
{{- else if .Values.redis.bundled -}}
{{- printf "redis://%s-redis:6379/0" (include "tagger.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "tagger.apiKeysSecret" -}}
{{- if .Values.apiKeys.existingSecret -}}
{{- .Values.apiKeys.existingSecret -}}
{{- else if .Values.apiKeys.keys -}}
{{- printf "%s-api-keys" (include "tagger.fullname" .) -}}
{{- end -}}
{{- end -}}
