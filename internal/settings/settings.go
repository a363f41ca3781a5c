package settings

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is a setting's type.
type Kind int

// The kinds of setting.
const (
	String   Kind = iota
	Bool          // true or false
	Duration      // time.ParseDuration
	Int64         // a decimal integer
	Secret        // a string printed redacted
	List          // comma-separated; the flag is repeatable with Repeatable, else one comma-separated value
	Map           // NAME=VALUE entries: a repeatable flag, comma-separated in the environment, KEY.NAME = VALUE lines in the file
)

// EnvPrefix begins every environment variable's name.
const EnvPrefix = "COVMIRROR_"

// Setting is one row of the table.
type Setting struct {
	// Key is the configuration-file key; for a Map, the prefix of its
	// KEY.NAME lines.
	Key string
	// Flag is the flag's name; zero: Key with dots as dashes.
	Flag string
	// Env is the environment variable; zero: EnvPrefix and Key in capitals,
	// dots and dashes as underscores; "-": none.
	Env string
	// Aliases are former keys, accepted as flag, variable and file key
	// (each derived as above).
	Aliases []string
	Kind    Kind
	// Default is the value when no flag, variable or file gives one.
	Default string
	// Usage is the flag's help; where else it can be given is appended.
	Usage string
	// Entry names a Map's entries in messages (PROPERTY, NAME, TOPIC).
	Entry string
	// Commands are the commands whose flags hold it; none: the global
	// flags.
	Commands []string
	// Repeatable lets a List's flag be given more than once, adding.
	Repeatable bool
	// NonEmpty refuses an empty String given by a flag or the file (a
	// template that came out empty): the default stands in only for a
	// setting given nowhere, never for one given as nothing.
	NonEmpty bool
	// Add adds one NAME=VALUE entry of a Map to m, checking it.
	Add func(m map[string]string, kv string) error
	// Separator separates a Map's entries in the environment variable;
	// zero: a comma. A Map whose values hold commas (lists) needs another.
	Separator string
	// SecretEntries says a Map's values may be credentials (a catalog's
	// keys): the flag package's refusal of an entry never quotes it.
	SecretEntries bool
	// Parse reads a List's comma-separated value (a flag's, the
	// variable's or the file's); nil: SplitList.
	Parse func(raw string) ([]string, error)
}

func (s *Setting) parseList(raw string) ([]string, error) {
	if s.Parse == nil {
		return SplitList(raw), nil
	}
	return s.Parse(raw)
}

// separator is what separates a List's or Map's entries in the
// environment.
func (s *Setting) separator() string {
	if s.Kind == Map && s.Separator != "" {
		return s.Separator
	}
	return ","
}

func (s *Setting) separatorName() string {
	if sep := s.separator(); sep != "," {
		return "entries separated by " + sep
	}
	return "comma-separated"
}

// FlagName is the setting's flag.
func (s *Setting) FlagName() string { return flagOf(s.Key, s.Flag) }

// EnvName is the setting's environment variable, "" for none.
func (s *Setting) EnvName() string { return envOf(s.Key, s.Env) }

func flagOf(key, override string) string {
	if override != "" {
		return override
	}
	return strings.ReplaceAll(key, ".", "-")
}

func envOf(key, override string) string {
	switch override {
	case "-":
		return ""
	case "":
		return EnvPrefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
	}
	return override
}

func (s *Setting) usage() string {
	var where []string
	if env := s.EnvName(); env != "" {
		if s.Kind == List || s.Kind == Map {
			env += ", " + s.separatorName()
		}
		where = append(where, "env "+env)
	}
	if s.Kind == Map {
		where = append(where, "config file "+s.Key+"."+s.Entry+" = VALUE")
	} else {
		where = append(where, "config file "+s.Key)
	}
	u := s.Usage + " (" + strings.Join(where, "; ") + ")"
	if len(s.Aliases) > 0 {
		var old []string
		for _, a := range s.Aliases {
			old = append(old, "--"+flagOf(a, ""))
		}
		u += "; formerly " + strings.Join(old, ", ") + ", still accepted"
	}
	return u
}

// Set is the table with the configuration file read: the values of the
// settings a flag set was registered with.
type Set struct {
	table  []Setting
	file   *File
	values map[string]*value
	errs   []error
	// formers are the flag sets registered with a setting that has
	// former names, and its names (the first the setting's own).
	formers []former
}

type former struct {
	fs    *flag.FlagSet
	names []string
}

type value struct {
	s    *Setting
	str  string
	b    bool
	d    time.Duration
	n    int64
	list []string
	m    map[string]string
	// fromFlag: the flag replaced the fallback (lists and maps).
	fromFlag bool
}

// New is the table with the file read (nil: no file).
func New(table []Setting, file *File) *Set {
	if file == nil {
		file = &File{values: map[string]string{}, maps: map[string]map[string]string{}}
	}
	return &Set{table: table, file: file, values: map[string]*value{}}
}

// Register adds the flags of command's settings ("" for the global ones)
// to fs, each with its fallback (environment, file, default) as the
// flag's default, so that --help shows what applies.
func (set *Set) Register(fs *flag.FlagSet, command string) {
	for i := range set.table {
		s := &set.table[i]
		if (command == "") != (len(s.Commands) == 0) || (command != "" && !slices.Contains(s.Commands, command)) {
			continue
		}
		v := &value{s: s}
		set.values[s.Key] = v
		names := []string{s.FlagName()}
		for _, a := range s.Aliases {
			names = append(names, flagOf(a, ""))
		}
		if len(names) > 1 {
			set.formers = append(set.formers, former{fs, names})
		}
		fb, err := set.fallback(s)
		if err != nil {
			set.errs = append(set.errs, err)
		}
		for i, name := range names {
			use := s.usage()
			if i > 0 {
				use = "the former name of --" + names[0]
			}
			switch s.Kind {
			case String:
				if s.NonEmpty {
					v.str = fb.str
					fs.Var(nonEmptyValue{&v.str}, name, use)
				} else {
					fs.StringVar(&v.str, name, fb.str, use)
				}
			case Secret:
				v.str = fb.str
				fs.Var(secretValue{&v.str}, name, use)
			case Bool:
				fs.BoolVar(&v.b, name, fb.b, use)
			case Duration:
				fs.DurationVar(&v.d, name, fb.d, use)
			case Int64:
				fs.Int64Var(&v.n, name, fb.n, use)
			case List, Map:
				v.list, v.m = fb.list, fb.m
				fs.Var(collection{v}, name, use)
			}
		}
	}
}

// fallback is a setting's value without its flag.
func (set *Set) fallback(s *Setting) (*value, error) {
	raw, from, ok := "", "", false
	for _, key := range append([]string{s.Key}, s.Aliases...) {
		// The current name's variable over a former one's: variables
		// gather from several places (a pod spec, a config map) while a
		// rename rolls out.
		if env := envOf(key, s.Env); env != "" && os.Getenv(env) != "" {
			raw, from, ok = os.Getenv(env), env, true
			break
		}
	}
	v := &value{s: s, m: map[string]string{}}
	if !ok && s.Kind == Map {
		for _, key := range append([]string{s.Key}, s.Aliases...) {
			if m := set.file.maps[key]; len(m) > 0 {
				v.m = m
				return v, nil
			}
		}
		return v, nil
	}
	if !ok {
		for _, key := range append([]string{s.Key}, s.Aliases...) {
			if fv, in := set.file.values[key]; in {
				if ok {
					return v, fmt.Errorf("%s and %s are the same setting (one its former name): give one", from, set.file.where(key))
				}
				raw, from, ok = fv, set.file.where(key), true
			}
		}
		if ok && s.NonEmpty && strings.TrimSpace(raw) == "" {
			v.parse(s.Default)
			return v, fmt.Errorf("%s: %s is empty: give a value or remove the line for the default (%q)", from, s.Key, s.Default)
		}
	}
	if !ok {
		raw, from = s.Default, "the default of --"+s.FlagName()
	}
	if err := v.parse(raw); err != nil {
		v.parse(s.Default)
		return v, fmt.Errorf("%s: %w", from, err)
	}
	return v, nil
}

// parse sets v from a value given outside a flag.
func (v *value) parse(raw string) error {
	var err error
	switch v.s.Kind {
	case String, Secret:
		v.str = raw
	case Bool:
		if raw != "" {
			if v.b, err = strconv.ParseBool(raw); err != nil {
				return fmt.Errorf("%s %q: use true or false", v.s.Key, raw)
			}
		}
	case Duration:
		if raw != "" {
			if v.d, err = time.ParseDuration(raw); err != nil {
				return fmt.Errorf("%s %q: a duration such as 30s or 1m", v.s.Key, raw)
			}
		}
	case Int64:
		if raw != "" {
			if v.n, err = strconv.ParseInt(raw, 10, 64); err != nil {
				return fmt.Errorf("%s %q: an integer", v.s.Key, raw)
			}
		}
	case List:
		// Outside a flag, empty items (a trailing comma in a file or a
		// variable) are skipped, as they always were; the rest are the
		// parser's as the flag gives them, exact bytes: " search" after a
		// comma is the name " search" in a file or a variable too.
		if items := slices.DeleteFunc(strings.Split(raw, ","), func(s string) bool { return s == "" }); len(items) > 0 {
			v.list, err = v.s.parseList(strings.Join(items, ","))
		}
		return err
	case Map:
		for _, kv := range strings.Split(raw, v.s.separator()) {
			if err := v.s.Add(v.m, kv); err != nil {
				return err
			}
		}
	}
	return nil
}

// Err is what was wrong in the environment or the file for the settings
// registered so far, or in the flags parsed so far (a setting given under
// two of its names: a former name is the same flag, taken once): a usage
// mistake.
func (set *Set) Err() error {
	errs := slices.Clone(set.errs)
	for _, f := range set.formers {
		if !f.fs.Parsed() {
			continue
		}
		var given []string
		f.fs.Visit(func(fl *flag.Flag) {
			if slices.Contains(f.names, fl.Name) {
				given = append(given, "--"+fl.Name)
			}
		})
		if len(given) > 1 {
			errs = append(errs, fmt.Errorf("%s are the same setting, under its name and a former one: give --%s once", strings.Join(given, " and "), f.names[0]))
		}
	}
	return errors.Join(errs...)
}

func (set *Set) get(key string) *value {
	v := set.values[key]
	if v == nil {
		panic("settings: " + key + " was not registered") // a bug in the table's use
	}
	return v
}

// String is a String or Secret setting's value.
func (set *Set) String(key string) string { return set.get(key).str }

// Bool is a Bool setting's value.
func (set *Set) Bool(key string) bool { return set.get(key).b }

// Duration is a Duration setting's value.
func (set *Set) Duration(key string) time.Duration { return set.get(key).d }

// Int64 is an Int64 setting's value.
func (set *Set) Int64(key string) int64 { return set.get(key).n }

// List is a List setting's value.
func (set *Set) List(key string) []string { return set.get(key).list }

// Map is a Map setting's value.
func (set *Set) Map(key string) map[string]string { return set.get(key).m }

// IsBool reports whether the flag name (an alias included) is a Bool
// setting's, which takes no separate value.
func IsBool(table []Setting, name string) bool {
	for _, s := range table {
		if s.Kind != Bool {
			continue
		}
		if s.FlagName() == name || slices.ContainsFunc(s.Aliases, func(a string) bool { return flagOf(a, "") == name }) {
			return true
		}
	}
	return false
}

// Repeatable reports whether the flag name is a repeatable setting's.
func Repeatable(table []Setting, name string) bool {
	for _, s := range table {
		if (s.Kind == Map || s.Repeatable) && s.FlagName() == name {
			return true
		}
	}
	return false
}
