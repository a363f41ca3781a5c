package benthos

import (
	"github.com/redpanda-data/benthos/v4/public/service"
)

// Register adds the covmirror output and the covmirror_plan input to env:
// the call a team's own Benthos build makes, e.g.
//
//	env := service.NewEnvironment() // or service.GlobalEnvironment()
//	if err := benthos.Register(env); err != nil { ... }
func Register(env *service.Environment) error {
	if err := env.RegisterBatchOutput(OutputName, OutputSpec(), newOutput); err != nil {
		return err
	}
	return env.RegisterInput(PlanInputName, PlanInputSpec(), newPlanInput)
}
