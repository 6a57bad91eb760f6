{{/*
Checks that values.schema.json cannot express (relations between two values). Called once,
from deployments.yaml; each failure names the values to change.
*/}}
{{- define "hermes.validate" -}}
{{- range $role := list "api" "gateway" "worker" }}
{{- $a := (index $.Values $role).autoscaling }}
{{- if gt (int $a.minReplicas) (int $a.maxReplicas) }}
{{- fail (printf "%s.autoscaling.minReplicas (%d) is above maxReplicas (%d)" $role (int $a.minReplicas) (int $a.maxReplicas)) }}
{{- end }}
{{- end }}
{{- end -}}
