package benthos

import (
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// TestSecretFieldsAreScrubbed: a configuration printed with its secrets
// scrubbed (Benthos' echo --secrets, a config export) shows none of the
// pod's token, postgres.url or catalog properties (a catalog's S3 keys,
// credential or token are among them), nor the sidecar's token.
func TestSecretFieldsAreScrubbed(t *testing.T) {
	env := service.NewEnvironment()
	if err := Register(env); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		"pod.token":        "pod-token-Zq81fa77",
		"pod.postgres.url": "postgres://u:pg-pass-Zq82@db/x",
		"pod.catalog s3":   "s3-secret-key-Zq83",
		"pod.catalog cred": "client:cred-secret-Zq84",
		"sidecar.token":    "sidecar-token-Zq85",
	}
	conf := map[string]any{"output": map[string]any{OutputName: map[string]any{
		"batch_id": "${! meta(\"id\") }",
		"output":   map[string]any{"drop": map[string]any{}},
		"pod": map[string]any{
			"token":    secrets["pod.token"],
			"postgres": map[string]any{"url": secrets["pod.postgres.url"]},
			"catalog": map[string]any{"type": "rest", "uri": "http://127.0.0.1:8181",
				"s3.secret-access-key": secrets["pod.catalog s3"], "credential": secrets["pod.catalog cred"]},
		},
		"sidecar": map[string]any{"address": "127.0.0.1:9464", "token": secrets["sidecar.token"]},
	}}}
	out, err := env.FullConfigSchema("", "").NewStreamConfigMarshaller().SetScrubSecrets(true).AnyToYAML(conf)
	if err != nil {
		t.Fatal(err)
	}
	for field, secret := range secrets {
		if strings.Contains(out, secret) {
			t.Errorf("%s is printed in the scrubbed configuration:\n%s", field, out)
		}
	}
}

// TestURLFieldsUserInformationIsScrubbed: a setting holding a URL
// (sidecar.address, pod.object.url, pod.object.s3_endpoint) printed by
// Benthos (covmirror-benthos echo) shows no user information, a password
// or a token given as the user.
func TestURLFieldsUserInformationIsScrubbed(t *testing.T) {
	env := service.NewEnvironment()
	if err := Register(env); err != nil {
		t.Fatal(err)
	}
	for _, userinfo := range []string{"user:EchoPw7secret", "EchoTok7secret"} {
		conf := map[string]any{"output": map[string]any{OutputName: map[string]any{
			"batch_id": "1",
			"output":   map[string]any{"drop": map[string]any{}},
			"pod": map[string]any{"object": map[string]any{
				"url": "s3://" + userinfo + "@bucket/prefix", "s3_endpoint": "https://" + userinfo + "@s3.example"}},
			"sidecar": map[string]any{"address": "http://" + userinfo + "@127.0.0.1:9464"},
		}}}
		out, err := env.FullConfigSchema("", "").NewStreamConfigMarshaller().SetScrubSecrets(true).AnyToYAML(conf)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "7secret") {
			t.Errorf("user information %q is printed in the scrubbed configuration:\n%s", userinfo, out)
		}
	}
}
