{{/* Labels of every object; selectors use only app.kubernetes.io/name (immutable). */}}
{{- define "wattgraph.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/part-of: wattgraph
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ .root.Chart.Name }}-{{ .root.Chart.Version }}
{{- end }}

{{- define "wattgraph.kafka" -}}
{{- if .Values.kafka.bootstrapServers -}}{{ .Values.kafka.bootstrapServers }}
{{- else if .Values.kafka.enabled -}}kafka.{{ .Release.Namespace }}.svc:9092
{{- else -}}{{ fail "kafka.enabled=false needs kafka.bootstrapServers" }}
{{- end -}}
{{- end }}

{{- define "wattgraph.neo4j" -}}
{{- if .Values.neo4j.uri -}}{{ .Values.neo4j.uri }}
{{- else if .Values.neo4j.enabled -}}bolt://neo4j.{{ .Release.Namespace }}.svc:7687
{{- else -}}{{ fail "neo4j.enabled=false needs neo4j.uri" }}
{{- end -}}
{{- end }}

{{/* The container security context of every component but the agent. */}}
{{- define "wattgraph.restricted" -}}
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
{{- end }}

{{/* A Secret with a client's Kafka properties, mounted where its flag points. */}}
{{- define "wattgraph.kafkaClientVolume" -}}
{{- if .secret }}
- name: kafka-client
  secret:
    secretName: {{ .secret }}
    defaultMode: 0440
{{- end }}
{{- end }}
{{- define "wattgraph.kafkaClientMount" -}}
{{- if .secret }}
- name: kafka-client
  mountPath: /etc/wattgraph/kafka
  readOnly: true
{{- end }}
{{- end }}
