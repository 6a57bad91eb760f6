{{/*
hermesd's configuration, as HERMES__SECTION__KEY environment variables. Inline in each pod
(no ConfigMap), so a changed value changes the pod template and the pods roll by themselves;
the migration hook can run before anything of the release exists.
*/}}

{{/* Variables the chart sets itself; `config` may not set them (they would fight). */}}
{{- define "hermes.ownedEnv" -}}
{{- list
  "HERMES__HTTP__BIND" "HERMES__OPS__BIND" "HERMES__GATEWAY__BIND" "HERMES__GATEWAY__PUBLIC_URL"
  "HERMES__DATABASE__URL" "HERMES__DATABASE__MIGRATE_ON_START" "HERMES__REDIS__URL"
  "HERMES__RABBITMQ__URL" "HERMES__SECRETS__MASTER_KEY" "HERMES__WORKER__DRAIN_SECONDS"
  "HERMES__SANDBOX__BACKEND" "HERMES__SANDBOX__EGRESS_TRUSTED_CA_FILES" "HERMES__SANDBOX__KUBERNETES__NAMESPACE" "HERMES__SANDBOX__KUBERNETES__WORKER_NAMESPACE"
  "HERMES__SANDBOX__KUBERNETES__IMAGE" "HERMES__SANDBOX__KUBERNETES__PORT"
  "HERMES__SANDBOX__KUBERNETES__RUNTIME_CLASS" "HERMES__SANDBOX__KUBERNETES__STORAGE_CLASS"
  "HERMES__SANDBOX__KUBERNETES__WORKSPACE_GB" "HERMES__SANDBOX__DOCKER__SOCKET"
  "HERMES__SANDBOX__DOCKER__IPC_DIR" "HERMES__SANDBOX__DOCKER__IMAGE"
  "HERMES__TELEMETRY__OTLP_ENDPOINT" "HERMES__TELEMETRY__OTLP_PROTOCOL"
  "HERMES__ADMIN__PUBLIC_URL" "HERMES__ADMIN__SESSION_KEYS" "HERMES__ADMIN__OIDC__ISSUER"
  "HERMES__ADMIN__OIDC__CLIENT_ID" "HERMES__ADMIN__OIDC__CLIENT_SECRET" | toJson -}}
{{- end -}}

{{/*
`config` flattened: {llm: {request_timeout_seconds: 600}} -> HERMES__LLM__REQUEST_TIMEOUT_SECONDS.
Lists become JSON (hermesd's parser reads ["a", "b"]). Helm reads YAML numbers as floats, so
whole ones are printed as integers (10485760, not 1.048576e+07). Nulls are left out.
*/}}
{{- define "hermes.configEnv" -}}
{{- $owned := include "hermes.ownedEnv" . | fromJsonArray -}}
{{- range $key, $value := .map }}
{{- $name := printf "%s__%s" $.prefix (upper $key) }}
{{- if kindIs "map" $value }}
{{- include "hermes.configEnv" (dict "prefix" $name "map" $value) }}
{{- else if not (kindIs "invalid" $value) }}
{{- if has $name $owned }}
{{- fail (printf "config sets %s, which the chart owns: use the chart's own value for it (see helm/README.md, \"Values\")" $name) }}
{{- end }}
- name: {{ $name }}
  value: {{ if kindIs "slice" $value }}{{ toJson $value | quote }}{{ else if and (kindIs "float64" $value) (eq $value (float64 (int64 $value))) }}{{ int64 $value | quote }}{{ else }}{{ toString $value | quote }}{{ end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* One secret entry as an env var read from its Secret. */}}
{{- define "hermes.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      {{- include "hermes.secretKeyRef" . | nindent 6 }}
{{- end -}}

{{/* The gateway's public URL: gateway.publicUrl, else from the Ingress that routes it. */}}
{{- define "hermes.gatewayPublicUrl" -}}
{{- $ing := .Values.ingress -}}
{{- if .Values.gateway.publicUrl -}}
{{- .Values.gateway.publicUrl -}}
{{- else if and $ing.enabled $ing.gateway.enabled .Values.gateway.enabled -}}
{{- printf "%s://%s" (ternary "https" "http" $ing.tls.enabled) (default $ing.host $ing.gateway.host) -}}
{{- end -}}
{{- end -}}

{{/* Resource attributes the chart sets itself (telemetry.otlp.resourceAttributes may not). */}}
{{- define "hermes.ownedResourceAttributes" -}}
{{- list "k8s.namespace.name" "k8s.pod.name" "service.instance.id" | toJson -}}
{{- end -}}

{{/*
Trace export (telemetry.otlp), for every hermesd container; nothing while the endpoint is
empty. service.name stays hermesd's own per role; the pod's name and namespace come from the
downward API and reach OTEL_RESOURCE_ATTRIBUTES through $(VAR), which Kubernetes expands
only for variables defined before it in the list.
*/}}
{{- define "hermes.telemetryEnv" -}}
{{- $o := .Values.telemetry.otlp -}}
{{- if $o.endpoint }}
- name: HERMES__TELEMETRY__OTLP_ENDPOINT
  value: {{ $o.endpoint | quote }}
- name: HERMES__TELEMETRY__OTLP_PROTOCOL
  value: {{ $o.protocol | quote }}
{{- with $o.headers.existingSecret }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $o.headers.key }}
{{- end }}
{{- with $o.sampler }}
- name: OTEL_TRACES_SAMPLER
  value: {{ . | quote }}
{{- end }}
{{- if ne (toString $o.samplerArg) "" }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ toString $o.samplerArg | quote }}
{{- end }}
- name: HERMES_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: HERMES_POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- $attrs := list "k8s.namespace.name=$(HERMES_POD_NAMESPACE)" "k8s.pod.name=$(HERMES_POD_NAME)" "service.instance.id=$(HERMES_POD_NAME)" }}
{{- range $key := keys $o.resourceAttributes | sortAlpha }}
{{- $attrs = append $attrs (printf "%s=%s" $key (toString (index $o.resourceAttributes $key))) }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $attrs | quote }}
{{- end }}
{{- end -}}

{{/* What every hermesd process gets: listeners, the four secrets, `config`, traces, extraEnv. */}}
{{- define "hermes.commonEnv" -}}
{{- $root := .root -}}
- name: HERMES__OPS__BIND
  value: {{ printf "%s:%d" $root.Values.listenAddress (int $root.Values.opsPort) | quote }}
# The migration Job migrates; roles never do it on start (two versions racing on one schema).
- name: HERMES__DATABASE__MIGRATE_ON_START
  value: "false"
{{ include "hermes.secretEnv" (dict "root" $root "entry" "databaseUrl" "name" "HERMES__DATABASE__URL") }}
{{ include "hermes.secretEnv" (dict "root" $root "entry" "redisUrl" "name" "HERMES__REDIS__URL") }}
{{ include "hermes.secretEnv" (dict "root" $root "entry" "rabbitmqUrl" "name" "HERMES__RABBITMQ__URL") }}
{{ include "hermes.secretEnv" (dict "root" $root "entry" "masterKey" "name" "HERMES__SECRETS__MASTER_KEY") }}
{{- with include "hermes.gatewayPublicUrl" $root }}
- name: HERMES__GATEWAY__PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- include "hermes.configEnv" (dict "prefix" "HERMES" "map" $root.Values.config) }}
{{- include "hermes.telemetryEnv" $root }}
{{- end -}}

{{/* Where the workers find sandbox.egressTrustedCAs' files, as a JSON list. */}}
{{- define "hermes.egressCaFiles" -}}
{{- $files := list -}}
{{- range .keys }}{{ $files = append $files (printf "/etc/hermes/egress-ca/%s" .) }}{{ end -}}
{{- toJson $files -}}
{{- end -}}

{{/* The role's own variables. */}}
{{- define "hermes.roleEnv" -}}
{{- $root := .root -}}
{{- $v := index $root.Values .role -}}
{{- if eq .role "api" }}
- name: HERMES__HTTP__BIND
  value: {{ printf "%s:%d" $root.Values.listenAddress (int $v.port) | quote }}
{{- include "hermes.adminEnv" $root }}
{{- else if eq .role "gateway" }}
- name: HERMES__GATEWAY__BIND
  value: {{ printf "%s:%d" $root.Values.listenAddress (int $v.port) | quote }}
{{- else if eq .role "worker" }}
# The same value sets the pod's terminationGracePeriodSeconds (_pod.tpl).
- name: HERMES__WORKER__DRAIN_SECONDS
  value: {{ $v.drainSeconds | int | quote }}
- name: HERMES__SANDBOX__BACKEND
  value: {{ $root.Values.sandbox.backend | quote }}
{{- with $root.Values.sandbox.egressTrustedCAs }}
{{- if .configMap }}
# The private CAs of secrets' hosts, mounted from their ConfigMap (_pod.tpl).
- name: HERMES__SANDBOX__EGRESS_TRUSTED_CA_FILES
  value: {{ include "hermes.egressCaFiles" . | quote }}
{{- end }}
{{- end }}
{{- if eq $root.Values.sandbox.backend "kubernetes" }}
{{- $k := $root.Values.sandbox.kubernetes }}
- name: HERMES__SANDBOX__KUBERNETES__NAMESPACE
  value: {{ include "hermes.sandboxNamespace" $root | quote }}
# Each sandbox's own NetworkPolicy admits the workers from this namespace (a pod selector
# alone would look for them in the sandbox namespace).
- name: HERMES__SANDBOX__KUBERNETES__WORKER_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: HERMES__SANDBOX__KUBERNETES__IMAGE
  value: {{ include "hermes.sandboxImage" $root | quote }}
- name: HERMES__SANDBOX__KUBERNETES__PORT
  value: {{ $k.port | int | quote }}
- name: HERMES__SANDBOX__KUBERNETES__TLS
  value: {{ $k.tls | quote }}
- name: HERMES__SANDBOX__KUBERNETES__WORKSPACE_GB
  value: {{ $k.workspaceGb | int | quote }}
{{- with $k.runtimeClassName }}
- name: HERMES__SANDBOX__KUBERNETES__RUNTIME_CLASS
  value: {{ . | quote }}
{{- end }}
{{- with $k.storageClassName }}
- name: HERMES__SANDBOX__KUBERNETES__STORAGE_CLASS
  value: {{ . | quote }}
{{- end }}
{{- else }}
{{- $d := $root.Values.sandbox.docker }}
- name: HERMES__SANDBOX__DOCKER__SOCKET
  value: {{ $d.socketPath | quote }}
- name: HERMES__SANDBOX__DOCKER__IPC_DIR
  value: {{ $d.ipcHostPath | quote }}
- name: HERMES__SANDBOX__DOCKER__IMAGE
  value: {{ include "hermes.sandboxImage" $root | quote }}
{{- end }}
{{- end }}
{{- if or (eq .role "api") (eq .role "worker") (eq .role "all") }}
{{- $s := $root.Values.sandbox }}
{{- with $s.images }}
# The images agents may pick (the API checks an agent's choice, the worker runs it).
- name: HERMES__SANDBOX__IMAGES
  value: {{ include "hermes.sandboxImages" . | quote }}
{{- end }}
- name: HERMES__SANDBOX__MAX__CPUS
  value: {{ $s.max.cpus | toString | quote }}
- name: HERMES__SANDBOX__MAX__MEMORY_MB
  value: {{ $s.max.memoryMb | int | quote }}
- name: HERMES__SANDBOX__MAX__DISK_MB
  value: {{ $s.max.diskMb | int | quote }}
- name: HERMES__SANDBOX__MAX__PIDS
  value: {{ $s.max.pids | int | quote }}
{{- end }}
{{- end -}}

{{/* `sandbox.images` as hermesd reads one variable of them: [{name="..",reference="..",carries=".."}]. */}}
{{- define "hermes.sandboxImages" -}}
{{- $items := list -}}
{{- range . -}}
{{- $items = append $items (printf "{name=%s,reference=%s,carries=%s}" (toJson .name) (toJson .reference) (toJson (default "" .carries))) -}}
{{- end -}}
[{{ join "," $items }}]
{{- end -}}

{{/* The console's address: admin.publicUrl, else from the Ingress that routes the API. */}}
{{- define "hermes.consoleUrl" -}}
{{- $ing := .Values.ingress -}}
{{- if .Values.admin.publicUrl -}}
{{- .Values.admin.publicUrl -}}
{{- else if $ing.enabled -}}
{{- printf "%s://%s" (ternary "https" "http" $ing.tls.enabled) $ing.host -}}
{{- end -}}
{{- end -}}

{{/* The admin console (api role): its address, session keys and identity provider; secrets by reference. */}}
{{- define "hermes.adminEnv" -}}
{{- $a := .Values.admin -}}
{{- with include "hermes.consoleUrl" . }}
- name: HERMES__ADMIN__PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- with $a.sessionKeys.existingSecret }}
- name: HERMES__ADMIN__SESSION_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $a.sessionKeys.key }}
{{- end }}
{{- if $a.oidc.issuer }}
- name: HERMES__ADMIN__OIDC__ISSUER
  value: {{ $a.oidc.issuer | quote }}
- name: HERMES__ADMIN__OIDC__CLIENT_ID
  value: {{ required "admin.oidc.clientId is required with admin.oidc.issuer" $a.oidc.clientId | quote }}
{{- with $a.oidc.clientSecret.existingSecret }}
- name: HERMES__ADMIN__OIDC__CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $a.oidc.clientSecret.key }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Everything, in order: common, role, then the operator's extras (which may override). */}}
{{- define "hermes.env" -}}
{{ include "hermes.commonEnv" . }}
{{- include "hermes.roleEnv" . }}
{{- with .root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- with (index .root.Values .role).extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
