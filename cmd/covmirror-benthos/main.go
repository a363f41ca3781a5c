// Command covmirror-benthos is Benthos with covmirror's two plugins: the
// covmirror output, which records coverage for what each sink acknowledged,
// and the covmirror_plan input, which emits the recovery plan for a replay
// stream. It runs as Benthos does:
//
//	covmirror-benthos -c examples/benthos/pipeline.yaml
//	covmirror-benthos lint examples/benthos/pipeline.yaml
//	covmirror-benthos list outputs
//
// It links Benthos' own components (pure and io) and no cgo; a team with
// its own Benthos build calls benthos.Register instead.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/benthos"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version from the build info is used.
var version = ""

func main() {
	if err := benthos.Register(service.GlobalEnvironment()); err != nil {
		fmt.Fprintln(os.Stderr, "covmirror-benthos: registering the covmirror plugins:", err)
		os.Exit(1)
	}
	v := version
	if v == "" {
		v = "(devel)"
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
			v = info.Main.Version
		}
	}
	service.RunCLI(context.Background(),
		service.CLIOptSetBinaryName("covmirror-benthos"),
		service.CLIOptSetProductName("covmirror-benthos"),
		service.CLIOptSetVersion(v, ""),
		service.CLIOptSetDocumentationURL("https://github.com/covmirror/covmirror/tree/main/examples/benthos"))
}
