package benthos

import (
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/internal/redact"
)

// Register adds the covmirror output and the covmirror_plan input to env:
// the call a team's own Benthos build makes, e.g.
//
//	env := service.NewEnvironment() // or service.GlobalEnvironment()
//	if err := benthos.Register(env); err != nil { ... }
func Register(env *service.Environment) error {
	output := func(conf *service.ParsedConfig, res *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
		o, b, n, err := newOutput(conf, res)
		return o, b, n, configError(conf, err)
	}
	if err := env.RegisterBatchOutput(OutputName, OutputSpec(), output); err != nil {
		return err
	}
	input := func(conf *service.ParsedConfig, res *service.Resources) (service.Input, error) {
		in, err := newPlanInput(conf, res)
		return in, configError(conf, err)
	}
	return env.RegisterInput(PlanInputName, PlanInputSpec(), input)
}

// configError is err, a plugin's refusal of its configuration, redacted:
// Benthos prints it as it is, and it may quote a setting's value (a
// duration, a layout, a pattern, an address) or a part of one, where a
// credential may have been written by mistake (a DSN in pod.durable). So
// besides the credentials of its own shape, every credential-shaped part
// of any of conf's values (Secrets), and the tokens, are redacted
// wherever they occur in it.
func configError(conf *service.ParsedConfig, err error) error {
	if err == nil {
		return nil
	}
	var secrets []string
	if all, aerr := conf.FieldAny(); aerr == nil {
		secrets = configSecrets(all, secrets)
	}
	for _, path := range [][]string{{fieldPod, "token"}, {fieldPod, "metrics_token"}, {fieldSidecar, "token"}} {
		if v, verr := conf.FieldString(path...); verr == nil {
			secrets = append(secrets, v)
		}
	}
	return redact.Error(err, secrets...)
}

// configSecrets adds to secrets the credential-shaped parts of v's
// strings, keys and values, at any depth.
func configSecrets(v any, secrets []string) []string {
	switch v := v.(type) {
	case string:
		return append(secrets, redact.Secrets(v)...)
	case map[string]any:
		for k, e := range v {
			secrets = configSecrets(e, append(secrets, redact.Secrets(k)...))
		}
	case []any:
		for _, e := range v {
			secrets = configSecrets(e, secrets)
		}
	}
	return secrets
}
