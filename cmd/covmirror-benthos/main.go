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

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/benthos"
	"github.com/covmirror/covmirror/internal/version"
)

// versionFlags are Benthos' own spellings of its version flag; given
// alone, covmirror-benthos prints what covmirror's binaries print
// (Benthos' would leave out the commit and the Go version).
var versionFlags = map[string]bool{"--version": true, "-version": true, "-v": true, "--v": true}

func main() {
	info := version.Get()
	if len(os.Args) == 2 && versionFlags[os.Args[1]] {
		if err := info.Write(os.Stdout, "covmirror-benthos"); err != nil {
			os.Exit(1)
		}
		return
	}
	if err := benthos.Register(service.GlobalEnvironment()); err != nil {
		fmt.Fprintln(os.Stderr, "covmirror-benthos: registering the covmirror plugins:", err)
		os.Exit(1)
	}
	service.RunCLI(context.Background(),
		service.CLIOptSetBinaryName("covmirror-benthos"),
		service.CLIOptSetProductName("covmirror-benthos"),
		service.CLIOptSetVersion(info.String(), info.Date),
		service.CLIOptSetDocumentationURL("https://github.com/covmirror/covmirror/tree/main/examples/benthos"))
}
