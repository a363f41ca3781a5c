package lite

import (
	"errors"
	"flag"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/internal/settings"
)

// TestGlobalFlagsAfterTheCommandMoveBeforeIt: a global flag after the
// command, with its value as a separate word or after =, a boolean one
// alone, moves before the command; the command's own flags, a flag of the
// same name as a global one among them, and its arguments stay.
func TestGlobalFlagsAfterTheCommandMoveBeforeIt(t *testing.T) {
	table := []settings.Setting{State, LogLevel,
		{Key: "unsafe", Kind: settings.Bool}, {Key: "writer"}, {Key: "own", Commands: []string{"gaps"}}}
	fs := flag.NewFlagSet("gaps", flag.ContinueOnError)
	fs.Bool("json", false, "")
	fs.String("sink", "", "")
	fs.String("writer", "", "the command's own flag of a global name")
	args := []string{"--log-level", "debug", "gaps", "--json", "--state", "d i r", "--sink", "--state", "--unsafe", "--writer", "w", "--config=c", "--log-level=warn", "x", "--state", "y"}
	err := ParseFlags(fs, args[3:], "covmirror", table)
	var g *GlobalsAfterCommand
	if !errors.As(err, &g) {
		t.Fatalf("ParseFlags: %v, want *GlobalsAfterCommand", err)
	}
	moved, ok := MoveGlobals(args, len(args)-2, err)
	want := []string{"--log-level", "debug", "--state", "d i r", "--unsafe", "--config=c", "--log-level=warn", "gaps", "--json", "--sink", "--state", "--writer", "w", "x", "--state", "y"}
	if !ok || !slices.Equal(moved, want) {
		t.Fatalf("MoveGlobals:\n got %q\nwant %q", moved, want)
	}
	if err := ParseFlags(fs, []string{"--json", "--bogus"}, "covmirror", table); errors.As(err, &g) || ExitCode(err) != 2 {
		t.Fatalf("an unknown flag: %v, want the usage error it was", err)
	}
	if _, ok := MoveGlobals(args, 3, errors.New("other")); ok {
		t.Fatal("MoveGlobals moved for another error")
	}
}
