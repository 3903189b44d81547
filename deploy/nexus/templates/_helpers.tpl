{{/* The release's base name. */}}
{{- define "nexus.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "nexus.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries; "component" is the service it belongs to. */}}
{{- define "nexus.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "nexus.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: nexus
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{- define "nexus.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nexus.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "nexus.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "nexus.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "nexus.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "nexus.secretName" -}}
{{- default (include "nexus.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* The four services: name, values key, port, and whether they speak gRPC. */}}
{{- define "nexus.components" -}}
components:
  - {name: gateway, key: gateway, grpc: false}
  - {name: orchestrator, key: orchestrator, grpc: true}
  - {name: model-router, key: modelRouter, grpc: true}
  - {name: capability, key: capability, grpc: true}
{{- end -}}

{{/* A peer's gRPC target: a headless Service, so clients balance over every pod. */}}
{{- define "nexus.peer" -}}
{{- printf "dns:///%s-%s:%v" (include "nexus.fullname" .root) .name .port -}}
{{- end -}}

{{- define "nexus.peerPods" -}}
- podSelector:
    matchLabels:
      {{- include "nexus.selectorLabels" . | nindent 6 }}
{{- end }}
{{- define "nexus.dnsEgress" -}}
# Every pod resolves names through the cluster DNS.
- to:
    - namespaceSelector: {}
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  ports:
    - {protocol: UDP, port: 53}
    - {protocol: TCP, port: 53}
{{- end }}
{{- define "nexus.metricsIngress" -}}
{{- if .root.Values.networkPolicy.metricsFrom }}
- from:
    {{- toYaml .root.Values.networkPolicy.metricsFrom | nindent 4 }}
  ports:
    - {protocol: TCP, port: {{ .root.Values.metrics.port }}}
{{- end }}
{{- end }}

{{- define "nexus.otlpEgress" -}}
{{- if .Values.otel.endpoint }}
# Spans to the OpenTelemetry collector.
- to:
    {{- toYaml .Values.otel.collector.to | nindent 4 }}
  ports:
    - {protocol: TCP, port: {{ .Values.otel.collector.port }}}
{{- end }}
{{- end }}

{{/* Egress to Redis: the in-cluster pods, or redis.externalCIDR. */}}
{{- define "nexus.redisEgress" -}}
- to:
    {{- if .Values.redis.enabled }}
    {{- include "nexus.peerPods" (dict "root" . "component" "redis") | nindent 4 }}
    {{- else }}
    - ipBlock: {cidr: {{ required "redis.externalCIDR is required for the NetworkPolicy when redis.enabled is false" .Values.redis.externalCIDR }}}
    {{- end }}
  ports:
    - {protocol: TCP, port: {{ .Values.redis.port }}}
{{- end }}
