package sidecar

import "github.com/prometheus/client_golang/prometheus"

// counters count the API's traffic by route: requests by status code,
// records recorded, rejects by the rule they broke, and how long requests
// took.
type counters struct {
	requests *prometheus.CounterVec
	records  *prometheus.CounterVec
	rejects  *prometheus.CounterVec
	// latency is by route alone: the route names are a fixed set
	// (methodLabel), so a caller cannot mint series.
	latency *prometheus.HistogramVec
}

func newCounters() *counters {
	return &counters{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "covmirror_sidecar_requests_total",
			Help: "Requests to the sidecar API, by route and status code.",
		}, []string{"route", "code"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "covmirror_sidecar_records_total",
			Help: "Ranges recorded into the local tier through the sidecar API, by route.",
		}, []string{"route"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "covmirror_sidecar_rejects_total",
			Help: "Requests refused by the sidecar API, by route and the rule they broke.",
		}, []string{"route", "rule"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "covmirror_sidecar_request_duration_seconds",
			Help:    "Latency of requests to the sidecar API, from routing to the last byte written, by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route"}),
	}
}

// Collector returns the sidecar's collectors for the caller to register:
// covmirror_sidecar_requests_total{route,code},
// covmirror_sidecar_records_total{route},
// covmirror_sidecar_rejects_total{route,rule} and the
// covmirror_sidecar_request_duration_seconds{route} histogram.
func (s *Server) Collector() prometheus.Collector { return collectors{s.counters} }

type collectors struct{ c *counters }

func (c collectors) Describe(ch chan<- *prometheus.Desc) {
	c.c.requests.Describe(ch)
	c.c.records.Describe(ch)
	c.c.rejects.Describe(ch)
	c.c.latency.Describe(ch)
}

func (c collectors) Collect(ch chan<- prometheus.Metric) {
	c.c.requests.Collect(ch)
	c.c.records.Collect(ch)
	c.c.rejects.Collect(ch)
	c.c.latency.Collect(ch)
}
