package sidecar

import "github.com/prometheus/client_golang/prometheus"

// counters count the API's traffic by route: requests by status code,
// records recorded, and rejects by the rule they broke.
type counters struct {
	requests *prometheus.CounterVec
	records  *prometheus.CounterVec
	rejects  *prometheus.CounterVec
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
	}
}

// Collector returns the sidecar's collectors for the caller to register:
// covmirror_sidecar_requests_total{route,code},
// covmirror_sidecar_records_total{route} and
// covmirror_sidecar_rejects_total{route,rule}.
func (s *Server) Collector() prometheus.Collector { return collectors{s.counters} }

type collectors struct{ c *counters }

func (c collectors) Describe(ch chan<- *prometheus.Desc) {
	c.c.requests.Describe(ch)
	c.c.records.Describe(ch)
	c.c.rejects.Describe(ch)
}

func (c collectors) Collect(ch chan<- prometheus.Metric) {
	c.c.requests.Collect(ch)
	c.c.records.Collect(ch)
	c.c.rejects.Collect(ch)
}
