package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// writeTable prints rows under their column names, aligned.
func writeTable(w io.Writer, columns []string, rows [][]any) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "(no rows)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(columns, "\t"))
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(cells(row), "\t"))
	}
	return tw.Flush()
}

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
			out[i] = v.UTC().Format(time.RFC3339Nano)
		case int64:
			out[i] = strconv.FormatInt(v, 10)
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}

// writeIndentedTable is writeTable with every line indented by three spaces.
func writeIndentedTable(w io.Writer, columns []string, rows [][]any) error {
	var buf strings.Builder
	if err := writeTable(&buf, columns, rows); err != nil {
		return err
	}
	text := strings.TrimSuffix(buf.String(), "\n")
	_, err := io.WriteString(w, "   "+strings.ReplaceAll(text, "\n", "\n   ")+"\n")
	return err
}
