package lite

import (
	"path/filepath"

	"github.com/covmirror/covmirror/internal/settings"
)

// DefaultState is the state directory's default: a directory beside the
// working directory. tier.DefaultState is this.
const DefaultState = "./covmirror-data"

// LocalDir is the local tier's directory under the state directory state
// ("" for DefaultState).
func LocalDir(state string) string {
	if state == "" {
		state = DefaultState
	}
	return filepath.Join(state, "local")
}

// The settings both binaries take, each defined once here.
var (
	State = settings.Setting{Key: "state", NonEmpty: true, Default: DefaultState,
		Usage: "state directory: the local tier, and the embedded catalog and warehouse when no catalog is configured"}
	LogLevel  = settings.Setting{Key: "log.level", Default: "info", Usage: "log level on stderr: debug, info, warn or error"}
	LogFormat = settings.Setting{Key: "log.format", Default: "text", Usage: "log format on stderr: text or json"}
)

// Table is covmirror-lite's settings table.
func Table() []settings.Setting {
	return []settings.Setting{State, LogLevel, LogFormat,
		{Key: "token-file", Commands: []string{"inspect"}, Usage: "a file holding the bearer token (mode 0600 or narrower) that inspect --url sends"}}
}

// CovmirrorKeys are the configuration-file keys covmirror takes and
// covmirror-lite does not (a Map's as "KEY.*"): covmirror-lite reads the
// same file, leaves these to covmirror, and still refuses any other key.
// cmd/covmirror's tests hold this list to covmirror's table.
var CovmirrorKeys = []string{
	"catalog.*", "namespace", "table", "writer", "durable", "postgres.url", "postgres.schema", "postgres.layout",
	"object.url", "object.s3.endpoint", "object.s3.region", "object.s3.force-path-style", "object.unsafe-store", "object.layout",
	"start.*", "reconcile.*", "addr", "socket", "interval", "max-body", "replicate-every", "mirror-every",
	"source.*", "allow-hosts", "sync", "sinks", "topic-sinks.*", "fleet", "fleet-ttl",
	"metrics.listen", "metrics.token-file", "metrics.on-api", "ready.max-checkpoint-age",
}

// Summaries are the commands' one-line summaries, covmirror's too.
var Summaries = map[string]string{
	"record":  "record a range a sink has acknowledged into the local tier",
	"inspect": "show the local tier's diagnostics (offline, or --url of a running pod)",
	"version": "print the version, commit, build date and Go version (--json for JSON)",
}
