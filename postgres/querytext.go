package postgres

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrUnprintable: a parameter has no literal a query's printed text could
// carry (a NUL byte or invalid UTF-8, which PostgreSQL text cannot hold).
var ErrUnprintable = errors.New("parameter cannot be written as a PostgreSQL literal")

// bindLiterals writes args into text as literals in a single pass over
// text's tokens: each placeholder $k of the original text is replaced once,
// and what is inserted is never scanned again, so no value can reach
// another's placeholder or end its own literal. Placeholders in comments,
// string literals, quoted identifiers and dollar quotes are text, not
// placeholders, and stay as they are.
func bindLiterals(text string, args []any) (string, error) {
	lits := make([]string, len(args))
	for i, a := range args {
		lit, err := literal(a)
		if err != nil {
			return "", fmt.Errorf("postgres: parameter $%d: %w", i+1, err)
		}
		lits[i] = lit
	}
	var out strings.Builder
	out.Grow(len(text))
	i := 0
	for i < len(text) {
		c := text[i]
		start := i
		switch {
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			i = untilAfter(text, i, "\n")
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			i = blockCommentEnd(text, i)
		case c == '\'':
			i = quotedEnd(text, i, '\'', escapeString(text, i))
		case c == '"':
			i = quotedEnd(text, i, '"', false)
		case c == '$' && !identBefore(text, i):
			if j := digitsEnd(text, i+1); j > i+1 {
				k, err := strconv.Atoi(text[i+1 : j])
				if err != nil || k < 1 || k > len(lits) {
					return "", fmt.Errorf("postgres: the query's text has placeholder %s, but it is given %d parameters", text[i:j], len(lits))
				}
				out.WriteString(lits[k-1])
				i = j
				continue
			}
			if tag, ok := dollarTag(text, i); ok {
				i = untilAfter(text, i+len(tag), tag)
				break
			}
			i++
		default:
			i++
		}
		out.WriteString(text[start:i])
	}
	return out.String(), nil
}

// literal is v as a PostgreSQL literal. A string is an E” literal holding
// only printable ASCII, everything else as a backslash escape, so it reads
// the same whatever standard_conforming_strings and the client encoding
// are, and a name cannot drive the DBA's terminal. A negative number is
// parenthesised, so that a "-" before its placeholder cannot make "--".
func literal(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "NULL", nil
	case string:
		return stringLiteral(v)
	case []byte:
		return stringLiteral(string(v))
	case bool:
		return strconv.FormatBool(v), nil
	case int32:
		return intLiteral(int64(v)), nil
	case int64:
		return intLiteral(v), nil
	case int:
		return intLiteral(int64(v)), nil
	}
	// A named type of one of those (json.RawMessage for a jsonb
	// parameter, say) as its underlying value.
	switch rv := reflect.ValueOf(v); {
	case rv.Kind() == reflect.String:
		return stringLiteral(rv.String())
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8:
		return stringLiteral(string(rv.Bytes()))
	case rv.CanInt():
		return intLiteral(rv.Int()), nil
	}
	return "", fmt.Errorf("%w: a %T has no literal form here", ErrUnprintable, v)
}

func intLiteral(n int64) string {
	if n < 0 {
		return "(" + strconv.FormatInt(n, 10) + ")"
	}
	return strconv.FormatInt(n, 10)
}

func stringLiteral(s string) (string, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return "", fmt.Errorf("%w: %q has a NUL byte at byte %d, which PostgreSQL text cannot hold", ErrUnprintable, s, i)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %q is not valid UTF-8", ErrUnprintable, s)
	}
	var b strings.Builder
	b.WriteString("E'")
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`''`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte('\'')
	return b.String(), nil
}

// identBefore says the byte before i continues an identifier or keyword,
// in which a "$" is part of the name (PostgreSQL allows a$1 as a name).
func identBefore(text string, i int) bool {
	return i > 0 && isIdent(text[i-1])
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func digitsEnd(text string, i int) int {
	for i < len(text) && '0' <= text[i] && text[i] <= '9' {
		i++
	}
	return i
}

// dollarTag is the opening $tag$ of a dollar quote at i, if it is one.
func dollarTag(text string, i int) (string, bool) {
	j := i + 1
	for j < len(text) && isIdent(text[j]) && text[j] != '$' {
		if j == i+1 && '0' <= text[j] && text[j] <= '9' {
			return "", false
		}
		j++
	}
	if j < len(text) && text[j] == '$' {
		return text[i : j+1], true
	}
	return "", false
}

// untilAfter is the end of the first sep at or after from, or the end of
// text when there is none: an unterminated token runs to the end.
func untilAfter(text string, from int, sep string) int {
	if j := strings.Index(text[from:], sep); j >= 0 {
		return from + j + len(sep)
	}
	return len(text)
}

// blockCommentEnd is the end of the /* */ comment at i; they nest.
func blockCommentEnd(text string, i int) int {
	depth := 0
	for i < len(text) {
		switch {
		case strings.HasPrefix(text[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(text[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// escapeString says the quote at i opens an E” string, whose backslashes
// escape.
func escapeString(text string, i int) bool {
	return i > 0 && (text[i-1] == 'E' || text[i-1] == 'e') && !identBefore(text, i-1)
}

// quotedEnd is the end of the literal or quoted identifier at i, whose
// quote is doubled inside it.
func quotedEnd(text string, i int, q byte, backslashes bool) int {
	for i++; i < len(text); i++ {
		switch {
		case backslashes && text[i] == '\\':
			i++
		case text[i] == q && i+1 < len(text) && text[i+1] == q:
			i++
		case text[i] == q:
			return i + 1
		}
	}
	return i
}
