{{/* The chart's name, at most 63 characters (a label value). */}}
{{- define "covmirror.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name. Room is left for the longest
suffix, "-compaction" plus a CronJob's Job suffix (Job names are at most
63 characters, and a CronJob's name at most 52). */}}
{{- define "covmirror.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels selecting one component's pods: pass (list $ "component"). */}}
{{- define "covmirror.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "covmirror.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Every object's labels: pass (list $ "component"). */}}
{{- define "covmirror.labels" -}}
{{- $ := index . 0 -}}
{{ include "covmirror.selectorLabels" . }}
app.kubernetes.io/part-of: covmirror
app.kubernetes.io/version: {{ $.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $.Chart.Name $.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The labels every covmirror pod carries, which the PodMonitor and the
NetworkPolicy select. */}}
{{- define "covmirror.podSelector" -}}
app.kubernetes.io/name: {{ include "covmirror.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "covmirror.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The fleet mode in effect: every, elected or dedicated. */}}
{{- define "covmirror.fleetMode" -}}
{{- $mode := .Values.fleet.mode -}}
{{- if not $mode -}}
{{- $mode = ternary "every" "elected" (eq .Values.config.durable "iceberg") -}}
{{- end -}}
{{- if and (ne $mode "every") (eq .Values.config.durable "iceberg") -}}
{{- fail (printf "fleet.mode %q needs config.durable object or postgres (the fleet lease lives beside the sink objects or in the database; the iceberg tier has none): use fleet.mode every" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* The covmirror containers' environment: credentials from Secrets only. */}}
{{- define "covmirror.env" -}}
{{- $c := .Values.credentials -}}
{{- if and $c.catalogProps.secretName .Values.config.catalog -}}
{{- fail "credentials.catalogProps and config.catalog are both set: catalog properties come whole from one place, so with the Secret the file's would be ignored; put them all in the Secret" -}}
{{- end -}}
{{- if $c.s3.secretName }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: {name: {{ $c.s3.secretName }}, key: {{ $c.s3.accessKeyIdKey }}}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: {name: {{ $c.s3.secretName }}, key: {{ $c.s3.secretAccessKeyKey }}}
{{- end }}
{{- if $c.postgresURL.secretName }}
- name: COVMIRROR_POSTGRES_URL
  valueFrom:
    secretKeyRef: {name: {{ $c.postgresURL.secretName }}, key: {{ $c.postgresURL.key }}}
{{- end }}
{{- if $c.postgresPassword.secretName }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef: {name: {{ $c.postgresPassword.secretName }}, key: {{ $c.postgresPassword.key }}}
{{- end }}
{{- if $c.catalogProps.secretName }}
- name: COVMIRROR_CATALOG_PROPS
  valueFrom:
    secretKeyRef: {name: {{ $c.catalogProps.secretName }}, key: {{ $c.catalogProps.key }}}
{{- end }}
{{- end -}}

{{/* The container security context of every covmirror container. */}}
{{- define "covmirror.securityContext" -}}
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The covmirror volume mounts every covmirror container has. */}}
{{- define "covmirror.configMount" -}}
- {name: covmirror-config, mountPath: /etc/covmirror, readOnly: true}
- {name: covmirror-state, mountPath: /var/lib/covmirror}
{{- end -}}

{{/* The init container copying the metrics token to mode 0400, and its
volumes, when there is a token. */}}
{{- define "covmirror.tokenInit" -}}
{{- if .Values.metrics.tokenSecret.secretName }}
# The metrics token, copied out of the Secret with mode 0400: with fsGroup
# set, the kubelet makes a Secret's files group-readable (0440), and
# covmirror refuses a token file that group or others may read.
- name: covmirror-token
  image: {{ .Values.metrics.tokenCopyImage }}
  command: ["sh", "-c", "install -m 0400 /secret/{{ .Values.metrics.tokenSecret.key }} /run/covmirror-token/token"]
  securityContext:
    {{- include "covmirror.securityContext" . | nindent 4 }}
  volumeMounts:
    - {name: covmirror-token-secret, mountPath: /secret, readOnly: true}
    - {name: covmirror-token, mountPath: /run/covmirror-token}
{{- end }}
{{- end -}}

{{- define "covmirror.tokenVolumes" -}}
{{- if .Values.metrics.tokenSecret.secretName }}
- name: covmirror-token-secret
  secret: {secretName: {{ .Values.metrics.tokenSecret.secretName }}}
- name: covmirror-token
  emptyDir: {medium: Memory, sizeLimit: 1Mi}
{{- end }}
{{- end -}}

{{/* A value of covmirror.conf: one line, each # escaped (a # after a
space would start a comment). */}}
{{- define "covmirror.confValue" -}}
{{- $s := toString . -}}
{{- if contains "\n" $s -}}
{{- fail (printf "a covmirror.conf value holds a line break: %q" $s) -}}
{{- end -}}
{{- replace "#" "\\#" $s -}}
{{- end -}}

{{/* A covmirror container of a job or the fleet Deployment: pass (dict
"root" $ "name" NAME "args" ARGS "resources" RESOURCES "probes" BOOL). */}}
{{- define "covmirror.container" -}}
{{- $ := .root -}}
- name: {{ .name }}
  image: {{ include "covmirror.image" $ }}
  imagePullPolicy: {{ $.Values.image.pullPolicy }}
  args:
    - --config=/etc/covmirror/covmirror.conf
    {{- range .args }}
    - {{ . | quote }}
    {{- end }}
  {{- $env := include "covmirror.env" $ | trim }}
  {{- if or $env .extraEnv }}
  env:
    {{- with $env }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- with .extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  {{- if .probes }}
  ports:
    - {name: metrics, containerPort: {{ $.Values.metrics.port }}, protocol: TCP}
  {{- end }}
  volumeMounts:
    {{- include "covmirror.configMount" $ | nindent 4 }}
    {{- if and .probes $.Values.metrics.tokenSecret.secretName }}
    - {name: covmirror-token, mountPath: /run/covmirror-token, readOnly: true}
    {{- end }}
  {{- if .probes }}
  {{- with get $.Values.sidecar "startupProbe" }}
  startupProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with get $.Values.sidecar "livenessProbe" }}
  livenessProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  securityContext:
    {{- include "covmirror.securityContext" $ | nindent 4 }}
{{- end -}}

{{/* The volumes of a job's pod or the fleet Deployment's: pass $. */}}
{{- define "covmirror.jobVolumes" -}}
# The job's own scratch state: it reads and writes only the durable tier.
- name: covmirror-state
  emptyDir: {sizeLimit: 1Gi}
- name: covmirror-config
  configMap: {name: {{ include "covmirror.fullname" . }}-config}
{{- end -}}

{{/* A CronJob running one covmirror command: pass (dict "root" $
"component" NAME "values" VALUES "args" ARGS "restart" POLICY "backoff" N "extraEnv" ENV). */}}
{{- define "covmirror.cronJob" -}}
{{- $ := .root -}}
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ include "covmirror.fullname" $ }}-{{ .component }}
  labels:
    {{- include "covmirror.labels" (list $ .component) | nindent 4 }}
spec:
  schedule: {{ .values.schedule | quote }}
  # One run at a time: a run still going when the next is due is let be.
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 3
  failedJobsHistoryLimit: 3
  jobTemplate:
    spec:
      backoffLimit: {{ .backoff }}
      template:
        metadata:
          labels:
            {{- include "covmirror.labels" (list $ .component) | nindent 12 }}
          annotations:
            checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") $ | sha256sum }}
        spec:
          restartPolicy: {{ .restart }}
          {{- with $.Values.imagePullSecrets }}
          imagePullSecrets:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            {{- toYaml $.Values.podSecurityContext | nindent 12 }}
          containers:
            {{- include "covmirror.container" (dict "root" $ "name" "covmirror" "args" .args "resources" .values.resources "probes" false "extraEnv" .extraEnv) | nindent 12 }}
          volumes:
            {{- include "covmirror.jobVolumes" $ | nindent 12 }}
{{- end -}}

{{/* The scrape annotations of a pod with a metrics port. */}}
{{- define "covmirror.scrapeAnnotations" -}}
{{- if .Values.monitoring.scrapeAnnotations }}
# /metrics on the read-only listener, for deploy/prometheus.yaml's job.
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.metrics.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}
