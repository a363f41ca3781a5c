package lite

import (
	"errors"
	"flag"
)

// ExitGaps is the exit status of a command run with --exit-code that
// found gaps, as git diff --exit-code exits 1 on a difference: distinct
// from 1 (a failure) and 2 (a usage error), so that a script tells "there
// is work" from "the command failed".
const ExitGaps = 3

// ErrGapsFound is returned by a command run with --exit-code that found
// gaps and printed them: exit status ExitGaps, and nothing more printed.
var ErrGapsFound = errors.New("gaps found (--exit-code: exit status 3)")

// ExitCodeFlag registers --exit-code on a command that lists gaps.
func ExitCodeFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("exit-code", false, "exit with status 3 when there are gaps, as git diff --exit-code does on a difference (without it: 0; 1 is still a failure, 2 a usage error)")
}

// GapsFound is the outcome of a command that listed n gaps and then got
// err writing them: err, else ErrGapsFound when exitCode is set and n > 0.
func GapsFound(exitCode bool, n int, err error) error {
	if err == nil && exitCode && n > 0 {
		return ErrGapsFound
	}
	return err
}

// Quiet says main prints nothing for err: --help and --version printed
// what was asked, and --exit-code's status is the answer.
func Quiet(err error) bool { return errors.Is(err, ErrHelp) || errors.Is(err, ErrGapsFound) }
