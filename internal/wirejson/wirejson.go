// Package wirejson holds the strict checks every JSON surface of covmirror
// applies to what encoding/json forgives, so that one body has one meaning:
// a key that is not exactly a wire name, a key given twice, a number sent
// as a string, and a string that is not UTF-8 text. The record API and
// coverage.ParseExtents share it: two names that decode alike would let
// one caller's coverage or extent stand for another's.
package wirejson

import (
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Fields are an object's wire names, and which of them are numbers; What
// lists them for error messages.
type Fields struct {
	Names   []string
	Numbers []bool
	What    string
}

// Error is a broken rule: Rule names it for programs (invalid-utf8,
// unknown-field, duplicate-field, type).
type Error struct {
	Rule string
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Check scans an object that decoded for what encoding/json forgives:
// a key that is not exactly a wire name (names match case-insensitively and
// through escapes, so "END" or "\u0065nd" would override "end"), a key
// given twice (the last would win), a number sent as a string (json.Number
// accepts "12"), and a string that is not UTF-8 text. One pass over the
// bytes, no allocation: the object's values are scalars (it decoded into a
// struct of scalar fields).
func Check(raw []byte, f Fields) *Error {
	var seen [8]bool
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(raw) {
			return nil // unterminated: the decoder already refused it
		}
		str := raw[i+1 : j]
		if err := CheckString(str); err != nil {
			return &Error{Rule: "invalid-utf8", Err: err}
		}
		k := j + 1
		for k < len(raw) && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
			k++
		}
		i = j
		if k >= len(raw) || raw[k] != ':' {
			continue // a string value, not a key
		}
		field := slices.Index(f.Names, string(str))
		if field < 0 {
			return &Error{Rule: "unknown-field", Err: fmt.Errorf("unknown field %q: the fields are %s (lowercase, unescaped)", str, f.What)}
		}
		if seen[field] {
			return &Error{Rule: "duplicate-field", Err: fmt.Errorf("field %q is given twice", str)}
		}
		seen[field] = true
		for k++; k < len(raw) && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r'); k++ {
		}
		if f.Numbers[field] && k < len(raw) && raw[k] == '"' {
			return &Error{Rule: "type", Err: fmt.Errorf("field %q is a JSON string; want a number", str)}
		}
		i = k - 1
	}
	return nil
}

// CheckString refuses what encoding/json would quietly turn into U+FFFD: a
// string's raw bytes that are not UTF-8, and a \u escape of a lone UTF-16
// surrogate. Two names that differ only there would decode to one name,
// and one caller's coverage would then claim another's batches.
func CheckString(str []byte) error {
	if !utf8.Valid(str) {
		return fmt.Errorf("string %q is not valid UTF-8: strings are UTF-8 text", str)
	}
	for i := 0; i < len(str); i++ {
		if str[i] != '\\' {
			continue
		}
		i++
		if i >= len(str) || str[i] != 'u' {
			continue // \" \\ \n ...: one escaped byte
		}
		r, ok := hex4(str, i+1)
		if !ok {
			return nil // malformed: the decoder refused it already
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return fmt.Errorf("string %q has a lone UTF-16 surrogate \\u%04x: strings are UTF-8 text", str, r)
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := rune(0), i+6 < len(str) && str[i+1] == '\\' && str[i+2] == 'u'
			if ok {
				lo, ok = hex4(str, i+3)
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return fmt.Errorf("string %q has a lone UTF-16 surrogate \\u%04x: strings are UTF-8 text", str, r)
			}
			i += 6
		}
	}
	return nil
}

// hex4 reads the four hex digits at str[i:].
func hex4(str []byte, i int) (rune, bool) {
	if i+4 > len(str) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(str[i:i+4]), 16, 32)
	return rune(v), err == nil
}
