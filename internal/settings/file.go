package settings

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// File is a configuration file's settings.
type File struct {
	path   string
	values map[string]string            // scalar and list keys
	maps   map[string]map[string]string // a Map's key -> its entries
	lines  map[string]int
}

// Path is the file's path, "" for none.
func (f *File) Path() string { return f.path }

func (f *File) where(key string) string {
	return fmt.Sprintf("%s:%d", f.path, f.lines[key])
}

// ReadError is a configuration file that exists and could not be read: a
// failure, where a wrong path or a wrong line is a usage mistake.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// Load reads the configuration file at path ("" for none) against the
// table: an unknown key, a key given twice and a Map entry its Add refuses
// are mistakes naming the line.
func Load(path string, table []Setting) (*File, error) {
	return LoadShared(path, table, nil)
}

// LoadShared is Load for a file another binary reads too: a key of others
// (a scalar's key, or "KEY.*" for a Map's entries) is that binary's and is
// skipped, still once only; any other key unknown to table is a mistake.
func LoadShared(path string, table []Setting, others []string) (*File, error) {
	f := &File{path: path, values: map[string]string{}, maps: map[string]map[string]string{}, lines: map[string]int{}}
	if path == "" {
		return f, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer file.Close()
	if info, err := file.Stat(); err != nil || info.IsDir() {
		return nil, fmt.Errorf("config file %s: is a directory, not a file of key = value lines", path)
	}
	scalars, maps := map[string]bool{}, map[string]*Setting{}
	var known []string
	for i := range table {
		s := &table[i]
		for _, key := range append([]string{s.Key}, s.Aliases...) {
			if s.Kind == Map {
				maps[key] = s
			} else {
				scalars[key] = true
				known = append(known, key)
			}
		}
	}
	foreign, foreignMaps := map[string]bool{}, map[string]bool{}
	for _, k := range others {
		if prefix, ok := strings.CutSuffix(k, ".*"); ok {
			foreignMaps[prefix] = true
		} else {
			foreign[k] = true
		}
	}
	var entries []string
	for i := range table {
		if table[i].Kind == Map {
			entries = append(entries, table[i].Key+"."+table[i].Entry)
		}
	}
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(StripComment(sc.Text()))
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		first, again := f.lines[k]
		f.lines[k] = n
		prefix, name, dotted := strings.Cut(k, ".")
		switch {
		case !ok || k == "":
			// Not quoted: most often a credential pasted with a space or
			// a colon for its =.
			return nil, fmt.Errorf("%s:%d: the line is not key = value (not shown: it may hold a credential)", path, n)
		case again:
			return nil, fmt.Errorf("%s:%d: key %q is given again (first on line %d): give it once", path, n, k, first)
		case dotted && name != "" && maps[prefix] != nil:
			m := f.maps[prefix]
			if m == nil {
				m = map[string]string{}
				f.maps[prefix] = m
			}
			if err := maps[prefix].Add(m, name+"="+v); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
		case scalars[k]:
			f.values[k] = v
		case foreign[k], dotted && name != "" && foreignMaps[prefix]:
			// the other binary's: it checks the value
		case !keyShape.MatchString(k):
			// Not quoted either: a credential pasted whole may hold an =
			// of its own (base64's padding, a URL's query).
			return nil, fmt.Errorf("%s:%d: the text before = is not a key (not shown: it may hold a credential): %s", path, n, keyList(known, entries, others))
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q: %s", path, n, k, keyList(known, entries, others))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &ReadError{fmt.Errorf("config file %s: %w", path, err)}
	}
	return f, nil
}

// keyShape is a key as the tables spell them: lowercase words of letters
// and digits joined by ., - or _, none longer than 20 characters (a
// token is one long word). An unknown key of another shape is not shown.
var keyShape = regexp.MustCompile(`^[a-z][a-z0-9]{0,19}(?:[._-][a-z0-9*]{1,20})*$`)

// keyList names the keys a file may hold: the table's scalars, its Maps'
// entries, and the keys of another binary that reads it too.
func keyList(known, entries, others []string) string {
	list := "the keys are " + strings.Join(known, ", ")
	if len(entries) > 0 {
		list += ", and " + strings.Join(entries, ", ")
	}
	if len(others) > 0 {
		list += "; and the keys another binary reading this file takes: " + strings.Join(others, ", ")
	}
	return list
}

// StripComment cuts line at a # that starts it or follows a space or tab,
// and turns \# into #. Without this, "state = /srv/x   # a note" would name
// a directory with the note in it.
func StripComment(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '#':
			b.WriteByte('#')
			i++
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ConfigPath finds --config among the global flags (before the command
// name), else the variable env.
func ConfigPath(args []string, table []Setting, env string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break // the command name: its flags are its own
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "config" {
			if !hasValue && i+1 < len(args) && name != "h" && name != "help" && !IsBool(table, name) {
				i++ // the flag's value
			}
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv(env)
}
