package queries

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// WriteJSON prints the rows as a JSON array of objects whose keys keep the
// columns' order.
func (r *Result) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	b.WriteByte('[')
	for n, row := range r.Rows {
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for i, col := range r.Columns {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(col)
			v, err := json.Marshal(row[i])
			if err != nil {
				return fmt.Errorf("query: column %s: %w", col, err)
			}
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// WriteCSV prints the rows as CSV with a header line.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(r.Columns)
	for _, row := range r.Rows {
		_ = cw.Write(cells(row))
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable prints the rows under their column names, aligned, every line
// after indent; "(no rows)" for none.
func (r *Result) WriteTable(w io.Writer, indent string) error {
	var buf strings.Builder
	if len(r.Rows) == 0 {
		buf.WriteString("(no rows)\n")
	} else {
		tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(r.Columns, "\t"))
		for _, row := range r.Rows {
			fmt.Fprintln(tw, strings.Join(shown(cells(row)), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	text := strings.TrimSuffix(buf.String(), "\n")
	_, err := io.WriteString(w, indent+strings.ReplaceAll(text, "\n", "\n"+indent)+"\n")
	return err
}

// shown quotes (strconv.Quote) a cell holding a character that does not
// print as itself: a name's line break would forge a row, its escape act
// on the terminal (CSV and JSON carry every byte as it is).
func shown(cells []string) []string {
	for i, c := range cells {
		if strings.IndexFunc(c, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }) >= 0 {
			cells[i] = strconv.Quote(c)
		}
	}
	return cells
}

// TimeLayout is how the text and CSV forms print a time: UTC, RFC 3339 with
// exactly six fractional digits.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// cells formats a row's values as text.
func cells(row []any) []string {
	out := make([]string, len(row))
	for i, v := range row {
		switch v := v.(type) {
		case nil:
			out[i] = ""
		case string:
			out[i] = v
		case time.Time:
			// Microseconds always (the engines' precision), so a column of
			// times lines up and sorts as text.
			out[i] = v.UTC().Format(TimeLayout)
		case int64:
			out[i] = strconv.FormatInt(v, 10)
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}
