package catalogtest

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// CellText writes every cell as text, so that each engine's types (DuckDB's
// decimals, pgx's numerics decoded from text or binary, times in any zone)
// compare by value.
func CellText(rows [][]any) [][]string {
	out := make([][]string, len(rows))
	for i, row := range rows {
		for _, v := range row {
			var s string
			switch v := v.(type) {
			case nil:
				s = "NULL"
			case time.Time:
				s = v.UTC().Format(time.RFC3339Nano)
			case pgtype.Numeric:
				f, _ := v.Value()
				s = fmt.Sprint(f)
			case fmt.Stringer:
				s = v.String()
			default:
				s = fmt.Sprint(v)
			}
			out[i] = append(out[i], s)
		}
	}
	return out
}
