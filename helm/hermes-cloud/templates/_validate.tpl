{{/*
Checks that values.schema.json cannot express, or not with a clear message (relations between
two values, keys the chart owns). Called once, from deployments.yaml; each failure names the
values to change.
*/}}
{{- define "hermes.validate" -}}
{{- range $role := list "api" "gateway" "worker" }}
{{- $a := (index $.Values $role).autoscaling }}
{{- if gt (int $a.minReplicas) (int $a.maxReplicas) }}
{{- fail (printf "%s.autoscaling.minReplicas (%d) is above maxReplicas (%d)" $role (int $a.minReplicas) (int $a.maxReplicas)) }}
{{- end }}
{{- end }}
{{- $ca := .Values.sandbox.egressTrustedCAs }}
{{- if and $ca.configMap (not $ca.keys) }}
{{- fail (printf "sandbox.egressTrustedCAs.keys must name the PEM files of ConfigMap %s to trust" $ca.configMap) }}
{{- end }}
{{- $o := .Values.telemetry.otlp }}
{{- $ratio := has $o.sampler (list "traceidratio" "parentbased_traceidratio") }}
{{- if and $ratio (eq (toString $o.samplerArg) "") }}
{{- fail (printf "telemetry.otlp.sampler=%s needs telemetry.otlp.samplerArg, the ratio of traces to keep (0 to 1)" $o.sampler) }}
{{- end }}
{{- if and (not $ratio) (ne (toString $o.samplerArg) "") }}
{{- fail (printf "telemetry.otlp.samplerArg is read only by the samplers traceidratio and parentbased_traceidratio, not %q" $o.sampler) }}
{{- end }}
{{- $owned := include "hermes.ownedResourceAttributes" . | fromJsonArray }}
{{- range $key := keys $o.resourceAttributes | sortAlpha }}
{{- if has $key $owned }}
{{- fail (printf "telemetry.otlp.resourceAttributes sets %s, which the chart sets from the pod" $key) }}
{{- end }}
{{- end }}
{{- end -}}
