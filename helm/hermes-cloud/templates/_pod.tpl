{{/*
The pod of one role, shared by the four Deployments: called with (dict "root" $ "role" "api").
*/}}

{{/* The container's ports: the role's listener (api, gateway) and ops on every role. */}}
{{- define "hermes.containerPorts" -}}
{{- $v := index .root.Values .role -}}
{{- if eq .role "api" }}
- name: http
  containerPort: {{ $v.port }}
  protocol: TCP
{{- else if eq .role "gateway" }}
- name: webhooks
  containerPort: {{ $v.port }}
  protocol: TCP
{{- end }}
- name: ops
  containerPort: {{ .root.Values.opsPort }}
  protocol: TCP
{{- end -}}

{{/*
Probes on the ops port. The startup probe covers hermesd's wait for its dependencies, so
liveness never kills a pod that is still connecting.
*/}}
{{- define "hermes.probes" -}}
{{- $p := .Values.probes -}}
startupProbe:
  httpGet: {path: /healthz, port: ops}
  {{- toYaml $p.startup | nindent 2 }}
livenessProbe:
  httpGet: {path: /healthz, port: ops}
  {{- toYaml $p.liveness | nindent 2 }}
readinessProbe:
  httpGet: {path: /readyz, port: ops}
  {{- toYaml $p.readiness | nindent 2 }}
{{- end -}}

{{/* Default spreading over zones and nodes; a role's own list replaces it. */}}
{{- define "hermes.topologySpread" -}}
{{- $v := index .root.Values .role -}}
{{- $t := .root.Values.topologySpread -}}
{{- if $v.topologySpreadConstraints }}
{{- toYaml $v.topologySpreadConstraints }}
{{- else if $t.enabled }}
{{- range $key := list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
- maxSkew: {{ $t.maxSkew }}
  topologyKey: {{ $key }}
  whenUnsatisfiable: {{ $t.whenUnsatisfiable }}
  labelSelector:
    matchLabels:
      {{- include "hermes.selectorLabels" $ | nindent 6 }}
  # Count only the pods of the current ReplicaSet, so a rollout spreads too.
  matchLabelKeys: [pod-template-hash]
{{- end }}
{{- end }}
{{- end -}}

{{/* The worker's extra volumes: the Docker socket and the sandboxes' socket directory. */}}
{{- define "hermes.dockerVolumes" -}}
{{- $d := .Values.sandbox.docker -}}
# Privileged-equivalent: the Docker engine runs whatever the worker asks, as root on the node.
- name: docker-socket
  hostPath: {path: {{ $d.socketPath | quote }}, type: Socket}
# Same path inside and outside: Docker bind-mounts it into sandboxes by its host path.
- name: sandbox-ipc
  hostPath: {path: {{ $d.ipcHostPath | quote }}, type: Directory}
{{- end -}}

{{- define "hermes.dockerMounts" -}}
{{- $d := .Values.sandbox.docker -}}
- name: docker-socket
  mountPath: {{ $d.socketPath | quote }}
- name: sandbox-ipc
  mountPath: {{ $d.ipcHostPath | quote }}
{{- end -}}

{{- define "hermes.podSpec" -}}
{{- $root := .root -}}
{{- $v := index $root.Values .role -}}
{{- $docker := and (eq .role "worker") (eq $root.Values.sandbox.backend "docker") -}}
{{- $egressCa := and (eq .role "worker") $root.Values.sandbox.egressTrustedCAs.configMap $root.Values.sandbox.egressTrustedCAs -}}
serviceAccountName: {{ include "hermes.serviceAccountName" . }}
# Only a worker that starts sandbox pods talks to the Kubernetes API.
automountServiceAccountToken: {{ and (eq .role "worker") (eq (include "hermes.kubeSandboxes" $root) "true") }}
# No *_SERVICE_HOST variables: hermesd reads only HERMES__*.
enableServiceLinks: false
{{- if eq .role "worker" }}
# Above the drain, so a stopping worker hands back its unfinished turns before it is killed.
terminationGracePeriodSeconds: {{ add $v.drainSeconds $v.terminationMarginSeconds }}
{{- else }}
terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
{{- end }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
  {{- if and $docker (not (kindIs "invalid" $root.Values.sandbox.docker.socketGroup)) }}
  supplementalGroups: [{{ $root.Values.sandbox.docker.socketGroup | int }}]
  {{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with include "hermes.topologySpread" . }}
topologySpreadConstraints:
  {{- . | trim | nindent 2 }}
{{- end }}
containers:
  - name: {{ .role }}
    image: {{ include "hermes.image" $root | quote }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    # The image's entrypoint is hermesd; the argument picks the role.
    args: [{{ .role }}]
    ports:
      {{- include "hermes.containerPorts" . | trim | nindent 6 }}
    env:
      {{- include "hermes.env" . | trim | nindent 6 }}
    {{- include "hermes.probes" $root | nindent 4 }}
    resources:
      {{- toYaml $v.resources | nindent 6 }}
    securityContext:
      {{- toYaml $root.Values.securityContext | nindent 6 }}
    volumeMounts:
      # The root filesystem is read-only; /tmp is the only writable path hermesd needs.
      - name: tmp
        mountPath: /tmp
      {{- if $docker }}
      {{- include "hermes.dockerMounts" $root | nindent 6 }}
      {{- end }}
      {{- if $egressCa }}
      - name: egress-ca
        mountPath: /etc/hermes/egress-ca
        readOnly: true
      {{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ $root.Values.tmpSizeLimit }}
  {{- if $docker }}
  {{- include "hermes.dockerVolumes" $root | nindent 2 }}
  {{- end }}
  {{- if $egressCa }}
  - name: egress-ca
    configMap:
      name: {{ $egressCa.configMap | quote }}
      items:
        {{- range $egressCa.keys }}
        - {key: {{ . | quote }}, path: {{ . | quote }}}
        {{- end }}
  {{- end }}
{{- end -}}
