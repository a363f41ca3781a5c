package benthos

import (
	"cmp"
	"errors"
	"fmt"
	"os"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/tier"
)

// DefaultPodAddr is the in-process pod's record API address by default: a
// free loopback port (logged), so that it never collides with a `covmirror
// serve` on pod.DefaultAddr.
const DefaultPodAddr = "127.0.0.1:0"

// The fields saying where coverage goes, which the covmirror output and
// the covmirror_plan input share.
const (
	fieldPod     = "pod"
	fieldSidecar = "sidecar"
)

// durableLint is pod.durable's lint: not one of the tiers. The value
// given is repeated only when it is a short lowercase word (a misspelt
// tier), never otherwise: Benthos' lint of an enum quotes it whatever it
// is, a DSN written there by mistake with its password.
var durableLint = fmt.Sprintf(`root = if ![%q, %q, %q].contains(this.string()) {
  if this.string().re_match("^[a-z]{1,16}$") {
    "pod.durable %%q is not one of %[1]s, %[2]s or %[3]s".format(this.string())
  } else {
    "pod.durable is not one of %[1]s, %[2]s or %[3]s (the value given is not repeated: it may be a credential)"
  }
}`, tier.Iceberg, tier.Object, tier.Postgres)

// podField is the in-process pod's settings: the settings of `covmirror
// serve`, each with serve's default.
func podField() *service.ConfigField {
	return service.NewObjectField(fieldPod,
		service.NewStringField("state").Default(tier.DefaultState).
			Description("The state directory: the local tier, and the embedded catalog and warehouse when no catalog is configured (serve's `state`)."),
		service.NewStringEnumField("durable", tier.Iceberg, tier.Object, tier.Postgres).Default(tier.Iceberg).
			// Not Benthos' lint of an enum, which quotes the value given (a
			// DSN written here by mistake, its password included).
			LintRule(durableLint).
			Description("The durable tier: `iceberg` (the coverage table in raw's catalog), `object` (a sink object per sink under `object.url`) or `postgres` (coverage rows in raw's PostgreSQL at `postgres.url`)."),
		// Secret: a catalog's properties carry its credential, token and S3
		// keys, scrubbed wherever Benthos prints a configuration.
		service.NewStringMapField("catalog").Default(map[string]any{}).Secret().
			Description("iceberg-go catalog properties of raw's catalog; none: the embedded SQLite catalog under `state`. Secret: its credential, token and S3 keys are among them."),
		service.NewStringField("namespace").Default(iceberg.DefaultNamespace).Description("The coverage table's namespace."),
		service.NewStringField("table").Default(iceberg.DefaultTableName).Description("The coverage table's name."),
		service.NewStringField("writer").Default("").Description("This process's name in the rows it writes; empty: the host name."),
		service.NewObjectField("object",
			service.NewStringField("url").Default("").Secret().Description("`s3://BUCKET/PREFIX` or `file:///DIR`; empty: a directory under `state`. Scrubbed where Benthos prints a configuration, as every URL field of the plugins: a URL may carry user information."),
			service.NewStringField("s3_endpoint").Default("").Secret().Description("An S3-compatible store's endpoint; empty: AWS. Credentials come from the AWS environment. Scrubbed where Benthos prints a configuration: a URL may carry user information."),
			service.NewStringField("s3_region").Default("").Description("The S3 region; empty: the AWS environment's."),
			service.NewBoolField("s3_force_path_style").Default(false).Description("Address buckets as endpoint/BUCKET."),
			service.NewStringField("layout").Default("sinks").Description("How checkpoints are written: `sinks` (one object per sink under a compare-and-swap every pod meets) or `deltas` (one write-once object per checkpoint, folded by the fleet role)."),
			service.NewBoolField("unsafe_store").Default(false).Description("Write to an S3 store without checking first that it honours If-Match: only for a store known to."),
		).Description("With `durable: object`: where the sink objects live.").Advanced(),
		service.NewObjectField("postgres",
			service.NewStringField("url").Default("").Secret().Description("`postgres://USER@HOST:5432/DB`; the password from PGPASSWORD or ~/.pgpass."),
			service.NewStringField("schema").Default(postgres.DefaultSchema).Description("The schema of the coverage, checkpoints, positions and blobs tables."),
			service.NewStringField("layout").Default(string(postgres.LayoutRows)).Description("How checkpoints are written: `rows` (a row per destination per checkpoint) or `deltas` (one row per checkpoint, folded by the fleet role)."),
		).Description("With `durable: postgres`: raw's database.").Advanced(),
		service.NewDurationField("interval").Default(mirror.DefaultInterval.String()).Description("The checkpoint interval: what a lost process costs in replay."),
		service.NewDurationField("replicate_every").Default(pod.DefaultReplicateEvery.String()).
			Description("With `durable: object` or `postgres`: how often the primary is copied into the coverage table; `0s`: never.").Advanced(),
		service.NewStringField("addr").Default(DefaultPodAddr).Description("The pod's record API and coverage map; the default is a free loopback port, logged. An address other hosts reach needs `token`.").Advanced(),
		service.NewStringField("metrics_listen").Default("").Description("The pod's read-only listener: /healthz, /readyz and /metrics (the checkpoint and gap metrics), never a write (serve's `metrics.listen`); empty: none (Benthos' own HTTP server has its /ready and /metrics).").Advanced(),
		service.NewStringField("metrics_token").Default("").Secret().Description("The bearer token /metrics on `metrics_listen` needs; not `token`, which it refuses. Empty: none.").Advanced(),
		service.NewStringField("socket").Default("").Description("Also serve the record API on a Unix socket here.").Advanced(),
		service.NewStringField("token").Default("").Secret().Description("The bearer token the pod's record API requires over TCP.").Advanced(),
		service.NewBoolField("sync").Default(false).Description("fsync the local tier's write-ahead log at every record, so that a record survives a power loss too."),
		service.NewStringListField("sinks").Default([]any{}).Description("The sinks the pipeline writes every topic to, for the gaps of a topic with no rows (serve's `sinks`)."),
		topicSinksField("serve's `topic-sinks`."),
	).Description("The pod this process runs, shared by every covmirror output of the process (one pod per process: every output must give the same settings). Used unless `sidecar` is given.")
}

// sidecarField is a running pod's record API.
func sidecarField() *service.ConfigField {
	return service.NewObjectField(fieldSidecar,
		// Secret: a URL's user information (refused, but printed by
		// echo before it is), scrubbed wherever Benthos prints a
		// configuration; Benthos offers no scrubber of the user
		// information alone for a field that may be HOST:PORT.
		service.NewStringField("address").Default("").Secret().Description("The record API's base URL or HOST:PORT, as `covmirror serve --addr` printed it. Scrubbed where Benthos prints a configuration: a URL may carry user information."),
		service.NewStringField("socket").Default("").Description("The record API's Unix socket (`covmirror serve --socket`)."),
		service.NewStringField("token").Default("").Secret().Description("The bearer token of `covmirror serve --token-file`."),
	).Description("A running pod (`covmirror serve`) to record into instead of a pod in this process: give `address` or `socket`; then `pod` is not used.")
}

// sidecarSettings is a parsed sidecar field.
type sidecarSettings struct{ address, socket, token string }

// destination is where coverage goes: a sidecar, or else the pod.
type destination struct {
	pod     pod.Options
	sidecar *sidecarSettings
}

// parseDestination reads the pod and sidecar fields. A malformed setting
// is an error naming the field.
func parseDestination(conf *service.ParsedConfig) (destination, error) {
	var s sidecarSettings
	for _, f := range []struct {
		name string
		v    *string
	}{{"address", &s.address}, {"socket", &s.socket}, {"token", &s.token}} {
		v, err := conf.FieldString(fieldSidecar, f.name)
		if err != nil {
			return destination{}, err
		}
		*f.v = v
	}
	switch {
	case s.address != "" && s.socket != "":
		return destination{}, errors.New("covmirror: sidecar: give one of address (the record API's HOST:PORT) and socket (its Unix socket), not both")
	case s.address != "" || s.socket != "":
		return destination{sidecar: &s}, nil
	case s.token != "":
		return destination{}, errors.New("covmirror: sidecar.token without sidecar.address or sidecar.socket: give the running pod's address (or socket), or drop the token to record in-process")
	}
	opts, err := parsePod(conf.Namespace(fieldPod))
	return destination{pod: opts}, err
}

// parsePod reads the pod's settings into the options `covmirror serve`
// builds from the same ones.
func parsePod(c *service.ParsedConfig) (pod.Options, error) {
	var o pod.Options
	var strErr error
	str := func(path ...string) string {
		v, err := c.FieldString(path...)
		strErr = cmp.Or(strErr, err)
		return v
	}
	t := tier.Settings{Kind: str("durable"), State: str("state"), Namespace: str("namespace"), Table: str("table"), Writer: str("writer"),
		Object:   tier.ObjectSettings{URL: str("object", "url"), S3Endpoint: str("object", "s3_endpoint"), S3Region: str("object", "s3_region"), Layout: str("object", "layout")},
		Postgres: tier.PostgresSettings{URL: str("postgres", "url"), Schema: str("postgres", "schema"), Layout: str("postgres", "layout")}}
	o.Addr, o.Socket, o.Token = str("addr"), str("socket"), str("token")
	o.MetricsAddr, o.MetricsToken = str("metrics_listen"), str("metrics_token")
	err := strErr
	if err != nil {
		return o, err
	}
	for _, f := range []struct {
		v    *bool
		path []string
	}{{&t.Object.S3ForcePathStyle, []string{"object", "s3_force_path_style"}}, {&t.Object.UnsafeStore, []string{"object", "unsafe_store"}}, {&o.Sync, []string{"sync"}}} {
		if *f.v, err = c.FieldBool(f.path...); err != nil {
			return o, err
		}
	}
	if t.CatalogProps, err = c.FieldStringMap("catalog"); err != nil {
		return o, err
	}
	if len(t.CatalogProps) == 0 {
		t.CatalogProps = nil
	}
	for _, f := range []struct {
		name string
		v    string
	}{{"state", t.State}, {"namespace", t.Namespace}, {"table", t.Table}} {
		if f.v == "" {
			return o, fmt.Errorf("covmirror: pod.%s is empty: give one, or leave the field out for its default (another pipeline may share the default)", f.name)
		}
	}
	if t.Writer == "" {
		if t.Writer, err = os.Hostname(); err != nil {
			return o, fmt.Errorf("covmirror: pod.writer is not given and the host name is unknown (%w): give pod.writer", err)
		}
	}
	if o.Interval, err = c.FieldDuration("interval"); err != nil {
		return o, err
	}
	if o.ReplicateEvery, err = c.FieldDuration("replicate_every"); err != nil {
		return o, err
	}
	switch {
	case o.Interval <= 0:
		return o, errors.New("covmirror: pod.interval must be positive")
	case o.ReplicateEvery < 0:
		return o, errors.New("covmirror: pod.replicate_every must not be negative (0s: never)")
	case o.ReplicateEvery == 0:
		o.ReplicateEvery = pod.Never
	}
	o.Tier = t
	if o.Sinks, err = c.FieldStringList("sinks"); err != nil {
		return o, err
	}
	if len(o.Sinks) == 0 {
		o.Sinks = nil
	}
	if o.TopicSinks, err = parseTopicSinks(c); err != nil {
		return o, err
	}
	check := o
	check.EnsureDefaults()
	if err := check.Validate(); err != nil {
		return o, fmt.Errorf("covmirror: pod: %w", err)
	}
	return o, nil
}
