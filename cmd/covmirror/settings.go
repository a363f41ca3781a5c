package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/internal/settings"
	"github.com/covmirror/covmirror/lease"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/reconcile"
	"github.com/covmirror/covmirror/sidecar"
	"github.com/covmirror/covmirror/tier"
)

// table is every setting of the command line: its flag, environment
// variable, configuration-file key and usage derive from its row, and its
// value is a flag, else the environment, else the file, else the default
// (internal/settings states the rule). A file is key = value lines:
//
//	# covmirror.conf
//	state = /var/lib/covmirror   # the pod's own disk
//	writer = pod-a
//	catalog.type = sql
//	catalog.uri = postgres://covmirror@db:5432/lake
//	catalog.sql.driver = pgx
//	catalog.sql.dialect = postgres
//	catalog.warehouse = file:///srv/warehouse
var table = func() []settings.Setting {
	host, _ := os.Hostname()
	serve := []string{"serve"}
	return []settings.Setting{
		lite.State,
		{Key: "catalog", Flag: "catalog-prop", Env: "COVMIRROR_CATALOG_PROPS", Kind: settings.Map, Entry: "PROPERTY", Add: addProp, SecretEntries: true,
			Usage: "iceberg-go catalog property key=value, repeatable; none: the embedded SQLite catalog under --state"},
		{Key: "namespace", NonEmpty: true, Default: iceberg.DefaultNamespace, Usage: "namespace of the coverage table"},
		{Key: "table", NonEmpty: true, Default: iceberg.DefaultTableName, Usage: "name of the coverage table"},
		{Key: "writer", NonEmpty: true, Default: host, Usage: "this process's name in the table's rows"},
		{Key: "durable", Default: tier.Iceberg, Usage: "the durable tier: iceberg (the coverage table in raw's catalog), object (a sink object per sink under --object-url) or postgres (coverage rows in raw's PostgreSQL at --postgres-url); with object or postgres the table is their queryable replica"},
		{Key: "postgres.url", Kind: settings.Secret, Usage: "with --durable postgres: the database, postgres://USER@HOST:5432/DB (the password from PGPASSWORD or ~/.pgpass, never here)"},
		{Key: "postgres.schema", NonEmpty: true, Default: postgres.DefaultSchema, Usage: "with --durable postgres: the schema of the coverage, checkpoints and positions tables, created if missing"},
		{Key: "postgres.layout", Default: string(postgres.LayoutRows), Usage: "with --durable postgres: how checkpoints are written: rows (a row per destination per checkpoint: up to a few hundred pods at a 10 s interval) or deltas (one row per checkpoint in the blobs table, folded into partition-group bases by the fleet role: a fleet, or a short interval); reads see both"},
		{Key: "object.url", Usage: "with --durable object: s3://BUCKET/PREFIX or file:///DIR; none: a directory under --state"},
		{Key: "object.s3.endpoint", Usage: "S3 endpoint URL for an S3-compatible store; none: AWS; credentials come from the AWS environment"},
		{Key: "object.s3.region", Usage: "S3 region; none: the AWS environment's, else us-east-1"},
		{Key: "object.s3.force-path-style", Kind: settings.Bool, Usage: "address buckets as endpoint/BUCKET rather than BUCKET.endpoint, as most S3-compatible stores need"},
		{Key: "object.layout", Default: string(object.LayoutSinkObjects), Usage: "with --durable object: how checkpoints are written: sinks (one object per sink, a compare-and-swap every pod meets: a handful of pods) or deltas (one write-once object per checkpoint, folded into partition-group bases by the fleet role: a fleet); reads see both"},
		{Key: "object.unsafe-store", Kind: settings.Bool, Usage: "write to an S3 store without running check-store on it first: only for a store known to honour If-Match"},
		{Key: "start", Flag: "stream-start", Env: "COVMIRROR_STREAM_STARTS", Kind: settings.Map, Entry: "TOPIC", Add: addStart,
			Usage: "TOPIC=N: the first batch id of TOPIC's stream where it is not 0, repeatable: a source extent without a start (--acked-ends, the API's extents) takes its topic's"},
		lite.LogLevel,
		lite.LogFormat,

		{Key: "token-file", Commands: []string{"serve", "inspect", "reconcile"}, Usage: "a file holding the bearer token (mode 0600 or narrower): serve requires it as Authorization: Bearer TOKEN on every request over TCP but the map's page (and for an --addr other hosts can reach), reconcile on /metrics; inspect --url sends it"},
		{Key: reconcile.ConfigPrefix, Flag: "checker", Env: "-", Commands: []string{"reconcile"}, Kind: settings.Map, Entry: "SINK.KEY", Add: reconcile.AddConfigEntry,
			Usage: "a sink's checker, SINK.KEY=VALUE, repeatable: kind (sql, http or iceberg) and its keys; credentials only through the variables dsn-env and token-env name"},
		{Key: "addr", Commands: serve, Default: pod.DefaultAddr, Usage: "TCP listen address for the record API, the coverage map and /debug/coverage: PORT (loopback), :PORT (every interface) or HOST:PORT (loopback by default; another address needs --token-file)"},
		{Key: "metrics.listen", Commands: serve, Default: pod.DefaultMetricsAddr,
			Usage: "TCP listen address of the read-only listener, PORT (loopback), :PORT (every interface) or HOST:PORT: /healthz, /readyz and /metrics, never a write (loopback by default; in Kubernetes :9091, where the kubelet's probes and Prometheus reach it); empty: none"},
		{Key: "metrics.token-file", Commands: serve,
			Usage: "a file holding the bearer token /metrics on --metrics-listen needs (mode 0600 or narrower; not the record API's token, which that listener refuses); /healthz and /readyz need none; none: /metrics needs no token"},
		{Key: "metrics.on-api", Commands: serve, Kind: settings.Bool,
			Usage: "also serve /metrics on --addr, behind --token-file's token (off: only the metrics listener serves it)"},
		{Key: "ready.max-checkpoint-age", Commands: serve, Kind: settings.Duration, Default: "0s",
			Usage: "/readyz fails once the last successful checkpoint is older than this (0s: three checkpoint intervals)"},
		{Key: "socket", Commands: serve, Usage: "also serve the record API on a Unix socket at this path (mode 0600; a stale socket file is removed if nothing answers on it)"},
		{Key: "interval", Commands: serve, Kind: settings.Duration, Default: mirror.DefaultInterval.String(), Usage: "checkpoint interval"},
		{Key: "max-body", Commands: serve, Kind: settings.Int64, Default: fmt.Sprint(sidecar.DefaultMaxBodyBytes), Usage: "largest request body in bytes"},
		{Key: "replicate-every", Aliases: []string{"mirror-every"}, Commands: serve, Kind: settings.Duration, Default: pod.DefaultReplicateEvery.String(),
			Usage: "with --durable object or postgres: copy the primary into its replica, the coverage table, this often, so that the map, the gap metrics and any engine can read it (0: never)"},
		{Key: "fleet", Commands: serve, Default: pod.FleetEvery,
			Usage: "which pods do the fleet work, the gap metrics' whole-table refresh and the replica loop: every (each pod), elected (the pod holding the deployment's lease, beside the sink objects or in the PostgreSQL database; needs --durable object or postgres) or never (another process does: a pod run with --fleet elected)"},
		{Key: "fleet-ttl", Commands: serve, Kind: settings.Duration, Default: lease.DefaultTTL.String(),
			Usage: "with --fleet elected: how long the fleet lease outlives its holder's last renewal; a crashed holder is replaced after about this long"},
		{Key: "source", Env: "COVMIRROR_SOURCES", Commands: serve, Kind: settings.Map, Entry: "NAME", Add: addSource,
			Usage: "a source's regime, NAME=stored or NAME=broker-managed, repeatable: stored sources keep positions through PUT /v1/positions/NAME"},
		{Key: "allow-hosts", Flag: "allow-host", Commands: serve, Kind: settings.List, Repeatable: true,
			Usage: "a host name requests may give as Host besides localhost, IP addresses and --addr's host, e.g. a Service's DNS name; repeatable"},
		{Key: "sync", Commands: serve, Kind: settings.Bool, Usage: "fsync the local tier's write-ahead log at every commit, so that a 200 survives a power loss too (off: a 200 survives a SIGKILL or OOM kill once its write-behind commit ran, within milliseconds; a power loss costs what was not synced)"},
		{Key: "sinks", Commands: serve, Kind: settings.List, Parse: parseSinks,
			Usage: "the sinks the pipeline writes every topic to, comma-separated: the API, the map and the gap metrics plan their gaps in a topic they have no rows of (one lost on every destination), besides the sinks with rows"},
		{Key: "topic-sinks", Commands: serve, Kind: settings.Map, Entry: "TOPIC", Separator: ";", Add: lite.AddTopicSinks,
			Usage: "TOPIC=SINK,SINK: the sinks the pipeline writes TOPIC to, in place of --sinks for that topic (TOPIC= for none), repeatable; the sinks with rows of a topic are measured whatever is named"},
	}
}()

// tierSettings are the durable tier's settings from the global ones.
func tierSettings(set *settings.Set) tier.Settings {
	return tier.Settings{Kind: set.String("durable"), State: set.String("state"), CatalogProps: set.Map("catalog"),
		Namespace: set.String("namespace"), Table: set.String("table"), Writer: set.String("writer"),
		Object: tier.ObjectSettings{URL: set.String("object.url"), S3Endpoint: set.String("object.s3.endpoint"), S3Region: set.String("object.s3.region"),
			S3ForcePathStyle: set.Bool("object.s3.force-path-style"), UnsafeStore: set.Bool("object.unsafe-store"),
			Layout: set.String("object.layout")},
		Postgres: tier.PostgresSettings{URL: set.String("postgres.url"), Schema: set.String("postgres.schema"), Layout: set.String("postgres.layout")}}
}

func addProp(props map[string]string, kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		// Not quoted: a credential pasted with a space for its =, or the
		// part of one after a comma in COVMIRROR_CATALOG_PROPS.
		return errors.New("a catalog property is not key=value (not shown: it may hold a credential; COVMIRROR_CATALOG_PROPS separates properties by commas, so a value there cannot hold one)")
	}
	props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	return nil
}

// The settings' entries, read by package lite.
var (
	addStart   = lite.AddStart
	addSource  = lite.AddSource
	parseSinks = lite.ParseSinks
)
