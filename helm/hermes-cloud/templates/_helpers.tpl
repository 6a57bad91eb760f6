{{/*
Names, labels and images shared by every template. Role templates call these with a dict:
(dict "root" $ "role" "api"), where root is the top-level context.
*/}}

{{/* The roles, in a fixed order, so loops render deterministically. */}}
{{- define "hermes.roles" -}}
api gateway worker scheduler
{{- end -}}

{{- define "hermes.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Object names start with the release's name (hermes -> hermes-api, hermes-worker): unique in
its namespace already, so the chart's name adds nothing. fullnameOverride replaces it.
*/}}
{{- define "hermes.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* A component's object name: <fullname>-<component>, within DNS-1123's 63 characters. */}}
{{- define "hermes.componentName" -}}
{{- printf "%s-%s" (include "hermes.fullname" .root | trunc (int (sub 62 (len .role)))) .role | trimSuffix "-" -}}
{{- end -}}

{{- define "hermes.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Selector labels: name, instance and component only. They are immutable on a Deployment, so
nothing that changes between releases (version, chart) may appear here.
*/}}
{{- define "hermes.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hermes.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{/* Every object's labels: the selector labels plus version, chart and owner. */}}
{{- define "hermes.labels" -}}
{{ include "hermes.selectorLabels" . }}
app.kubernetes.io/version: {{ include "hermes.imageTag" .root | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: hermes-cloud
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "hermes.chart" .root }}
{{- end -}}

{{/* The tag that image.tag stands for (appVersion unless set). */}}
{{- define "hermes.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{/* repository@digest when pinned, else repository:tag. */}}
{{- define "hermes.imageRef" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "hermes.image" -}}
{{- include "hermes.imageRef" (dict "root" . "image" .Values.image) -}}
{{- end -}}

{{- define "hermes.sandboxImage" -}}
{{- include "hermes.imageRef" (dict "root" . "image" .Values.sandbox.image) -}}
{{- end -}}

{{/* The sandboxes' namespace: sandbox.namespace.name or <fullname>-sandboxes. */}}
{{- define "hermes.sandboxNamespace" -}}
{{- $name := default (printf "%s-sandboxes" (include "hermes.fullname" . | trunc 53 | trimSuffix "-")) .Values.sandbox.namespace.name -}}
{{- if eq $name .Release.Namespace -}}
{{- fail (printf "sandbox.namespace.name must differ from the release's namespace %q: sandboxes run at Pod Security baseline and are denied network access by default, which the hermesd pods must not be" .Release.Namespace) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* Whether workers start sandboxes as pods (and so need an API token and RBAC). */}}
{{- define "hermes.kubeSandboxes" -}}
{{- if and .Values.worker.enabled (eq .Values.sandbox.backend "kubernetes") -}}true{{- end -}}
{{- end -}}

{{/* The service account of a role: the worker has its own, the other roles share one. */}}
{{- define "hermes.serviceAccountName" -}}
{{- if eq .role "worker" -}}
{{- include "hermes.componentName" (dict "root" .root "role" "worker") -}}
{{- else -}}
{{- include "hermes.fullname" .root -}}
{{- end -}}
{{- end -}}

{{/* The chart-created Secret (secrets.create). */}}
{{- define "hermes.secretName" -}}
{{- printf "%s-secrets" (include "hermes.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{/*
Name and key of one of the four secret entries (databaseUrl, redisUrl, rabbitmqUrl,
masterKey): the chart's Secret, the entry's own existingSecret, or secrets.existingSecret.
*/}}
{{- define "hermes.secretKeyRef" -}}
{{- $s := .root.Values.secrets -}}
{{- $e := index $s .entry -}}
{{- if $s.create -}}
name: {{ include "hermes.secretName" .root }}
{{- else -}}
name: {{ required (printf "secrets.existingSecret (or secrets.%s.existingSecret) is required: name the Secret holding key %q, or set secrets.create=true for a trial" .entry $e.key) (coalesce $e.existingSecret $s.existingSecret) }}
{{- end }}
key: {{ $e.key }}
{{- end -}}

{{/*
The alert rule file (files/alerts.yaml, a copy of deploy/grafana/alerts.yaml), with the job
regex of its `up` alert replaced by observability.upJobRegex when that is set. The file must
hold the matcher below exactly once (deploy/grafana/check.py makes sure).
*/}}
{{- define "hermes.alertRules" -}}
{{- $text := .Files.Get "files/alerts.yaml" -}}
{{- $marker := "job=~\".*hermes.*\"" -}}
{{- with .Values.observability.upJobRegex -}}
{{- if ne 1 (len (splitList $marker $text | rest)) -}}
{{- fail (printf "files/alerts.yaml must contain %s exactly once for observability.upJobRegex" $marker) -}}
{{- end -}}
{{- $text = replace $marker (printf "job=~%s" (quote .)) $text -}}
{{- end -}}
{{- $text -}}
{{- end -}}
