package lite

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/internal/settings"
)

// GlobalsAfterCommand is what ParseFlags returns for global flags given
// after the command (covmirror gaps --state DIR): the binary runs again
// with them before it (MoveGlobals), as if typed there. A flag the command
// defines itself keeps the command's meaning.
type GlobalsAfterCommand struct {
	// Flags are the global flags as given, each with its value when that
	// was a separate word.
	Flags [][]string
}

func (e *GlobalsAfterCommand) Error() string {
	return fmt.Sprintf("global flags after the command: %q", e.Flags)
}

// globalFlags are the flags given after a command that are no flag of
// the command's fs but a global one of table (config among them): each
// with its value when that is the next word. The scan stops where the
// flag package stops, at "--" or the first argument that is no flag.
func globalFlags(fs *flag.FlagSet, args []string, table []settings.Setting) [][]string {
	var found [][]string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, global := globalFlag(name, table)
		if f := fs.Lookup(name); f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && (!ok || !bf.IsBoolFlag()) {
				i++ // the command's own flag's value
			}
			continue
		}
		if !global {
			continue // the flag package says it is unknown
		}
		words := []string{a}
		if takesValue && !hasValue && i+1 < len(args) {
			i++
			words = append(words, args[i])
		}
		found = append(found, words)
	}
	return found
}

// globalFlag says whether name is a global flag of table, and whether it
// takes a value.
func globalFlag(name string, table []settings.Setting) (takesValue, ok bool) {
	if name == "config" {
		return true, true
	}
	for i := range table {
		s := &table[i]
		if len(s.Commands) == 0 && s.FlagName() == name {
			return s.Kind != settings.Bool, true
		}
	}
	return false, false
}

// MoveGlobals is args, the binary's whole command line, with the global
// flags err (a *GlobalsAfterCommand) found after the command moved before
// it; nArgs is how many words the command and its arguments are. ok is
// false for any other err.
func MoveGlobals(args []string, nArgs int, err error) (moved []string, ok bool) {
	g, ok := err.(*GlobalsAfterCommand)
	if !ok || nArgs < 1 || nArgs > len(args) {
		return nil, false
	}
	at := len(args) - nArgs // the command's name
	rest := slices.Clone(args[at+1:])
	from := 0
	moved = slices.Clone(args[:at])
	for _, words := range g.Flags {
		for j := from; j+len(words) <= len(rest); j++ {
			if slices.Equal(rest[j:j+len(words)], words) {
				rest, from = slices.Delete(rest, j, j+len(words)), j
				break
			}
		}
		moved = append(moved, words...)
	}
	return append(append(moved, args[at]), rest...), true
}
