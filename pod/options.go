package pod

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/lease"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/sidecar"
	"github.com/covmirror/covmirror/tier"
)

// DefaultAddr is Options.Addr's default: loopback, so that no other host
// reaches the API without a token.
const DefaultAddr = "127.0.0.1:9464"

// DefaultMetricsAddr is the metrics listener's address serve takes when
// given none (Options.MetricsAddr's zero value is no listener):
// loopback, where only the pod's own containers reach it. In Kubernetes
// give the pod's address (":9091"): the kubelet's probes and Prometheus
// come from outside the pod.
const DefaultMetricsAddr = "127.0.0.1:9091"

// ReadyAgeIntervals is Options.ReadyMaxCheckpointAge's default in
// checkpoint intervals.
const ReadyAgeIntervals = 3

// DefaultReplicateEvery is Options.ReplicateEvery's default.
const DefaultReplicateEvery = time.Minute

// DefaultShutdownWindow is Options.ShutdownWindow's default: how long the
// shutdown waits for requests in flight.
const DefaultShutdownWindow = 10 * time.Second

// Never, as Options.ReplicateEvery, turns the replica loop off.
const Never time.Duration = -1

// Options configure a pod. The zero value, after EnsureDefaults, is the
// pod `covmirror serve` runs with no flags: the coverage table in the
// embedded catalog under tier.DefaultState, the API on DefaultAddr.
type Options struct {
	// Tier is the durable tier and the coverage table beside it.
	Tier tier.Settings
	// Addr is the TCP listen address of the record API, the coverage map
	// and /debug/coverage (and /metrics with MetricsOnAPI); zero:
	// DefaultAddr. An address other hosts can reach needs Token.
	Addr string
	// MetricsAddr is the TCP listen address of the read-only metrics
	// listener: /healthz, /readyz and /metrics, and no route that writes.
	// It may be any address without MetricsToken: it records nothing.
	// Zero: no metrics listener.
	MetricsAddr string
	// MetricsToken, if set, is the bearer token /metrics on the metrics
	// listener needs (never /healthz and /readyz: a kubelet probe cannot
	// send one). It must differ from Token, so that the scraper's
	// credential cannot record coverage. Never logged. Zero: none.
	MetricsToken string
	// MetricsOnAPI also serves /metrics on the record API's listener,
	// behind Token, as before the metrics listener existed. Zero: not.
	MetricsOnAPI bool
	// ReadyMaxCheckpointAge is how old the last successful checkpoint (an
	// idle pod's empty one counts) may be before /readyz fails. Zero:
	// ReadyAgeIntervals times Interval.
	ReadyMaxCheckpointAge time.Duration
	// Collectors are more Prometheus collectors for the pod's registry
	// (the build information, say). Zero: none.
	Collectors []prometheus.Collector
	// Socket, if set, also serves the record API on a Unix socket there.
	Socket string
	// Interval is the checkpoint interval; zero: mirror.DefaultInterval.
	Interval time.Duration
	// MaxBodyBytes is the largest request body; zero:
	// sidecar.DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReplicateEvery is how often the durable tier is copied into the
	// coverage table when the table is not the tier itself (Kind Object or
	// Postgres); zero: DefaultReplicateEvery; Never: not at all.
	ReplicateEvery time.Duration
	// Fleet says whether this pod does the fleet work, the jobs a
	// deployment needs once rather than per pod: the gap metrics' refresh
	// (a read of the whole coverage table) and the replica loop. FleetEvery:
	// every pod does; FleetElected: the pod holding the deployment's lease
	// (package lease, on the durable tier's own store: object or postgres);
	// FleetNever: none, another process does. A pod that does not do it
	// exports no gap series. Zero: FleetEvery.
	Fleet string
	// FleetTTL is the fleet lease's TTL with FleetElected: a pod that
	// crashed holding it is replaced after one to about one and a third
	// TTLs. Zero: lease.DefaultTTL.
	FleetTTL time.Duration
	// ShutdownWindow bounds the wait for requests in flight at shutdown;
	// zero: DefaultShutdownWindow.
	ShutdownWindow time.Duration
	// Sources are the declared sources' regimes: stored ones keep
	// positions through PUT /v1/positions/NAME.
	Sources []coverage.Source
	// Sinks are the sinks the pipeline writes every topic to (sidecar
	// Options.Sinks).
	Sinks []string
	// TopicSinks are the sinks the pipeline writes each of its keys to, in
	// place of Sinks for that topic (sidecar Options.TopicSinks).
	TopicSinks map[string][]string
	// Starts are the streams' declared first batch ids by topic.
	Starts map[string]uint64
	// Token, if set, is the bearer token every request over TCP must
	// carry, but the map's page. It is never logged.
	Token string
	// AllowedHosts are Host names requests may give besides localhost, IP
	// literals and Addr's host.
	AllowedHosts []string
	// Sync fsyncs the local tier's write-ahead log at every commit
	// (local.Options.Sync).
	Sync bool
	// Logger gets the pod's log lines; nil: Tier.Logger, else discarded.
	Logger *slog.Logger
}

// EnsureDefaults fills in the zero fields' defaults.
func (o *Options) EnsureDefaults() {
	if o.Logger == nil {
		o.Logger = o.Tier.Logger
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Tier.Logger == nil {
		o.Tier.Logger = o.Logger
	}
	o.Tier.EnsureDefaults()
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Interval == 0 {
		o.Interval = mirror.DefaultInterval
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = sidecar.DefaultMaxBodyBytes
	}
	if o.ReadyMaxCheckpointAge == 0 {
		o.ReadyMaxCheckpointAge = ReadyAgeIntervals * o.Interval
	}
	if o.ReplicateEvery == 0 {
		o.ReplicateEvery = DefaultReplicateEvery
	}
	if o.ShutdownWindow == 0 {
		o.ShutdownWindow = DefaultShutdownWindow
	}
	if o.Fleet == "" {
		o.Fleet = FleetEvery
	}
	if o.FleetTTL == 0 {
		o.FleetTTL = lease.DefaultTTL
	}
}

// Validate checks the options after EnsureDefaults.
func (o *Options) Validate() error {
	if o.Interval < 0 || o.MaxBodyBytes < 0 || o.ShutdownWindow < 0 {
		return errors.New("pod: the interval, the body limit and the shutdown window must be positive")
	}
	switch {
	case o.ReadyMaxCheckpointAge < 0:
		return errors.New("pod: the readiness bound on the checkpoint age must be positive")
	case o.MetricsToken != "" && o.MetricsAddr == "":
		return errors.New("pod: a metrics token without a metrics listener: give its address (--metrics-listen) too")
	case o.MetricsToken != "" && o.MetricsToken == o.Token:
		return errors.New("pod: the metrics token is the record API's token: give the metrics listener a token of its own, so that whoever scrapes the metrics cannot record coverage")
	}
	if o.ReplicateEvery < 0 && o.ReplicateEvery != Never {
		return errors.New("pod: the replica interval must be positive, or Never")
	}
	if _, err := coverage.SourceRegimes(o.Sources); err != nil {
		return err
	}
	if err := o.validateFleet(); err != nil {
		return err
	}
	return o.Tier.Validate()
}
