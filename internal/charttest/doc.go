// Package charttest tests the Helm chart at deploy/helm/covmirror offline:
// Helm's own loader, linter and renderer over every example values file,
// each rendered object decoded strictly into the Kubernetes API's Go types
// (and the Prometheus Operator's) and checked as a cluster would, the
// rendered sidecar against deploy/pod.yaml and the chart's alert rules
// against deploy/alerts.yaml.
//
// It exists for tests only and holds no code a binary links: Helm and the
// Kubernetes modules stay out of every covmirror binary. The invariant it
// guards is the deployment's share of "coverage may lag, never lead": the
// local tier on the pod's own disk (never shared), the sidecar that
// outlives the pipeline so that its last records are checkpointed, a
// single recovery worker, and alerts that keep a lag findable.
package charttest
