{{/*
Name of the chart, or nameOverride.
*/}}
{{- define "service-router-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified name used for every object of the release. With the default release name
(service-router-operator) it is service-router-operator.
*/}}
{{- define "service-router-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "service-router-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "service-router-operator.labels" -}}
helm.sh/chart: {{ include "service-router-operator.chart" . }}
{{ include "service-router-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: service-router-operator
{{- end }}

{{/*
Labels selecting the operator's pods.
*/}}
{{- define "service-router-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "service-router-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller-manager
{{- end }}

{{/*
The operator's service account.
*/}}
{{- define "service-router-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "service-router-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false: name the existing service account the operator runs as" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Prefix of the ClusterRoles for people (platform-admin, infrastructure-editor, editor, viewer,
gateway-reader).
*/}}
{{- define "service-router-operator.userRolePrefix" -}}
{{- .Values.rbac.userRoles.namePrefix | trimSuffix "-" }}
{{- end }}

{{/*
The operator image: repository@digest when a digest is set, else repository:tag (the tag defaults
to v<appVersion>, the tag `make docker-build` pushes).
*/}}
{{- define "service-router-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Scheme and port name of the metrics endpoint.
*/}}
{{- define "service-router-operator.metricsScheme" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/*
"true" when Helm renders against a cluster (install, upgrade, template --dry-run=server), empty when
it renders offline (helm template, helm lint, client-side dry runs). Offline, lookup returns
nothing and .Capabilities lists only Kubernetes' built-in APIs, so checks of the cluster's APIs
must not run there; the kube-system namespace exists in every cluster.
*/}}
{{- define "service-router-operator.talksToCluster" -}}
{{- if lookup "v1" "Namespace" "" "kube-system" }}true{{ end }}
{{- end }}

{{/*
Checks of the cluster the release is installed in, with a clear message. Only against a cluster.
*/}}
{{- define "service-router-operator.checkCluster" -}}
{{- if and .Values.installChecks.dnsEndpointCRD (include "service-router-operator.talksToCluster" .) }}
{{- if not (.Capabilities.APIVersions.Has "externaldns.k8s.io/v1alpha1/DNSEndpoint") }}
{{- fail "this cluster does not serve the ExternalDNS DNSEndpoint API (externaldns.k8s.io/v1alpha1, CRD dnsendpoints.externaldns.k8s.io). The operator writes DNSEndpoints for ExternalDNS: without that API it runs but publishes no DNS record (its DNSConfiguration dns-config reports ExternalDNSNotInstalled until the CRD is installed). Install the CRD first: it ships with ExternalDNS as config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml (docs/INSTALLATION.md#prerequisites). To install the operator before ExternalDNS anyway, set installChecks.dnsEndpointCRD=false." }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Checks across values that the schema cannot express with a clear message.
*/}}
{{- define "service-router-operator.validate" -}}
{{- if and .Values.podDisruptionBudget.enabled (lt (int .Values.replicaCount) 2) }}
{{- fail "podDisruptionBudget.enabled needs replicaCount of at least 2: with a single replica the budget would block every node drain" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount above 1 needs leaderElection.enabled=true: without leader election every replica would reconcile and they would fight over the same DNSEndpoints and Istio Gateways" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled=true: there is no metrics endpoint to scrape" }}
{{- end }}
{{- if and .Values.metrics.prometheusRule.enabled (not .Values.metrics.enabled) }}
{{- fail "metrics.prometheusRule.enabled needs metrics.enabled=true: the alerts use metrics nobody could scrape" }}
{{- end }}
{{- if and .Values.metrics.grafanaDashboard.enabled (not .Values.metrics.enabled) }}
{{- fail "metrics.grafanaDashboard.enabled needs metrics.enabled=true: the dashboard shows metrics nobody could scrape" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.prometheusServiceAccount.name (not .Values.metrics.serviceMonitor.prometheusServiceAccount.namespace) }}
{{- fail "metrics.serviceMonitor.prometheusServiceAccount.namespace is required when its name is set" }}
{{- end }}
{{- end }}
