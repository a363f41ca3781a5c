// Package versionmetric exports package version's Info as the gauge
// covmirror_build_info, 1 with the version, commit, date and Go version as
// labels, the way Prometheus exporters say which build they run. It is a
// package of its own so that the durable tiers, which stamp checkpoints
// with the version, do not link the Prometheus client.
//
// The invariant it owns: the labels are package version's, never set
// apart from it, so the metric and the binary's version command agree.
package versionmetric

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/internal/version"
)

// Name is the gauge's name.
const Name = "covmirror_build_info"

// Collector is covmirror_build_info for this binary.
func Collector() prometheus.Collector { return collectorOf(version.Get()) }

func collectorOf(i version.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: Name,
		Help: "Always 1: the covmirror version, commit, commit date and Go version of this process, as labels.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "commit": i.Commit, "date": i.Date, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
