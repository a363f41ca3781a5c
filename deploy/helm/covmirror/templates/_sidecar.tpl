{{/* The covmirror sidecar: pass (dict "root" $ "fleet" MODE), MODE the
value of serve --fleet. */}}
{{- define "covmirror.sidecar" -}}
{{- $ := .root -}}
{{- $v := $.Values -}}
- name: covmirror
  image: {{ include "covmirror.image" $ }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  # A native sidecar: it starts before the pipeline and stops after it, so
  # the pipeline's last records still land and the final checkpoint (on
  # SIGTERM) carries them. No preStop hook: the image has no shell.
  restartPolicy: Always
  args:
    - --config=/etc/covmirror/covmirror.conf
    - serve
    # The record API for the pipeline; its TCP address stays loopback.
    - --socket=/run/covmirror/covmirror.sock
    - --interval={{ $v.sidecar.interval }}
    # /healthz, /readyz and /metrics, read-only, on the pod's address.
    - --metrics-listen=0.0.0.0:{{ $v.metrics.port }}
    {{- if $v.metrics.tokenSecret.secretName }}
    - --metrics-token-file=/run/covmirror-token/token
    {{- end }}
    - --fleet={{ .fleet }}
    {{- if eq .fleet "elected" }}
    - --fleet-ttl={{ $v.fleet.ttl }}
    {{- end }}
    {{- if $v.sidecar.sinks }}
    - --sinks={{ join "," $v.sidecar.sinks }}
    {{- end }}
    {{- range $topic, $sinks := $v.sidecar.topicSinks }}
    - {{ printf "--topic-sinks=%s=%s" $topic (join "," $sinks) | quote }}
    {{- end }}
    {{- if $v.sidecar.sync }}
    - --sync
    {{- end }}
    {{- if $v.sidecar.replicateEvery }}
    - --replicate-every={{ $v.sidecar.replicateEvery }}
    {{- end }}
    {{- range $v.sidecar.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  {{- with include "covmirror.env" $ | trim }}
  env:
    {{- . | nindent 4 }}
  {{- end }}
  ports:
    - {name: metrics, containerPort: {{ $v.metrics.port }}, protocol: TCP}
  volumeMounts:
    {{- include "covmirror.configMount" $ | nindent 4 }}
    - {name: covmirror-socket, mountPath: /run/covmirror}
    {{- if $v.metrics.tokenSecret.secretName }}
    - {name: covmirror-token, mountPath: /run/covmirror-token, readOnly: true}
    {{- end }}
  {{- with get $v.sidecar "startupProbe" }}
  startupProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with get $v.sidecar "livenessProbe" }}
  livenessProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with get $v.sidecar "readinessProbe" }}
  readinessProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml $v.sidecar.resources | nindent 4 }}
  securityContext:
    {{- include "covmirror.securityContext" $ | nindent 4 }}
{{- end -}}

{{/* The user's containers, each with the socket directory and
COVMIRROR_SOCKET added: pass (list $ CONTAINERS). */}}
{{- define "covmirror.userContainers" -}}
{{- range index . 1 }}
{{- $c := deepCopy . }}
{{- $_ := set $c "volumeMounts" (append (default list (get $c "volumeMounts")) (dict "name" "covmirror-socket" "mountPath" "/run/covmirror")) }}
{{- $_ = set $c "env" (append (default list (get $c "env")) (dict "name" "COVMIRROR_SOCKET" "value" "/run/covmirror/covmirror.sock")) }}
- {{ toYaml $c | nindent 2 | trim }}
{{- end }}
{{- end -}}

{{/* A covmirror pod's volumes but the state: pass $. */}}
{{- define "covmirror.podVolumes" -}}
# The socket directory the pipeline and the sidecar share.
- name: covmirror-socket
  emptyDir: {medium: Memory, sizeLimit: 1Mi}
- name: covmirror-config
  configMap: {name: {{ include "covmirror.fullname" . }}-config}
{{- include "covmirror.tokenVolumes" . }}
{{- end -}}
