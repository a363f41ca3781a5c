package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"

	"github.com/covmirror/covmirror/coverage"
)

// The database/sql driver names the SQL checker registers.
const (
	// DriverPostgres is PostgreSQL through pgx's stdlib driver. Its query
	// names its parameters $1 (topic), $2 (partition), $3 (start) and $4
	// (end), each as often as it likes.
	DriverPostgres = "pgx"
	// DriverMySQL is MySQL or MariaDB through go-sql-driver/mysql. Its query
	// has exactly four ? placeholders, bound in order to topic, partition,
	// start and end.
	DriverMySQL = "mysql"
)

// SQLOptions configures NewSQL. The zero value of every field is a
// documented default.
type SQLOptions struct {
	// Count says the query returns one row of one column: how many distinct
	// batch ids of [start, end) the sink holds (see Counting), as
	// COUNT(DISTINCT batch_id); COUNT(*) counts an at-least-once sink's
	// duplicate rows and hides absences. Zero value:
	// the query returns the held batch ids, one per row.
	Count bool
	// Timeout bounds one query. Zero value: DefaultTimeout.
	Timeout time.Duration
}

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *SQLOptions) EnsureDefaults() {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
}

// Validate reports options no checker can run with.
func (o *SQLOptions) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("reconcile: SQL checker timeout %v is negative: give a positive one, or zero for %v", o.Timeout, DefaultTimeout)
	}
	return nil
}

// SQLChecker runs one query per range through database/sql. The query takes
// four parameters, in the driver's placeholder convention (DriverPostgres,
// DriverMySQL): the topic (text), the partition, and the range's start and
// end (exclusive) as signed 64-bit integers, so the sink's batch-id column
// is compared as batch_id >= start AND batch_id < end. A range reaching past
// math.MaxInt64 cannot be asked and is an error.
//
// The topic must be compared byte for byte. MySQL's and MariaDB's default
// collations ignore case and trailing spaces, and utf8mb4_bin still pads
// spaces, so topics "T" and "t " would be answered with topic "t"'s rows and
// their losses hidden: keep the column VARBINARY, or compare with
// BINARY topic = ? (or a NO PAD binary collation: utf8mb4_nopad_bin on
// MariaDB, utf8mb4_0900_bin on MySQL 8). PostgreSQL's default comparison of
// text is exact (a nondeterministic collation is not).
//
// A counting query (SQLOptions.Count) must count distinct batch ids,
// COUNT(DISTINCT batch_id): an at-least-once sink holds some batches twice,
// and COUNT(*) over their duplicates reaches a range's length with batches
// missing, hiding them.
type SQLChecker struct {
	db    *sql.DB
	query string
	opts  SQLOptions
}

// NewSQL returns a checker running query on db, which the caller opened
// (sql.Open with DriverPostgres or DriverMySQL) and closes. On MySQL and
// MariaDB, query must compare the topic as bytes (see SQLChecker): with a
// case-insensitive or PAD SPACE collation, losses of a topic differing
// only in case or trailing spaces are hidden.
func NewSQL(db *sql.DB, query string, opts SQLOptions) (*SQLChecker, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if db == nil || query == "" {
		return nil, errors.New("reconcile: an SQL checker needs a database and a query")
	}
	return &SQLChecker{db: db, query: query, opts: opts}, nil
}

// Held implements Checker: a query per range, ids refused outside it.
func (c *SQLChecker) Held(ctx context.Context, d coverage.Destination, ranges []coverage.Range) (*coverage.RangeSet, error) {
	if c.opts.Count {
		return Counting(c).Held(ctx, d, ranges)
	}
	var ids []uint64
	for _, r := range ranges {
		got, err := c.ids(ctx, d, r)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return heldOf(ids, ranges)
}

func (c *SQLChecker) ids(ctx context.Context, d coverage.Destination, r coverage.Range) ([]uint64, error) {
	args, err := sqlArgs(d, r)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	rows, err := c.db.QueryContext(ctx, c.query, args...)
	if err != nil {
		return nil, fmt.Errorf("query for %v: %w", r, timedOut(ctx, err))
	}
	defer rows.Close()
	var ids []uint64
	for rows.Next() {
		var id sql.NullInt64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("%w: a row of the query for %v: %v", ErrBadAnswer, r, err)
		}
		if !id.Valid || id.Int64 < 0 || !r.Contains(uint64(id.Int64)) {
			return nil, fmt.Errorf("%w: the query for %v returned batch id %v", ErrOutOfRange, r, sqlValue(id))
		}
		ids = append(ids, uint64(id.Int64))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query for %v: %w", r, timedOut(ctx, err))
	}
	return ids, nil
}

// Count implements Counter: the query returns one count.
func (c *SQLChecker) Count(ctx context.Context, d coverage.Destination, r coverage.Range) (uint64, error) {
	args, err := sqlArgs(d, r)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var n sql.NullInt64
	if err := c.db.QueryRowContext(ctx, c.query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count query for %v: %w", r, timedOut(ctx, err))
	}
	if !n.Valid || n.Int64 < 0 {
		return 0, fmt.Errorf("%w: the count query for %v returned %v", ErrBadAnswer, r, sqlValue(n))
	}
	return uint64(n.Int64), nil
}

func sqlArgs(d coverage.Destination, r coverage.Range) ([]any, error) {
	if err := askable(r); err != nil {
		return nil, err
	}
	return []any{d.Topic, int64(d.Partition), int64(r.Start), int64(r.End)}, nil
}

func sqlValue(n sql.NullInt64) any {
	if !n.Valid {
		return "NULL"
	}
	return n.Int64
}

// timedOut makes a query cut by its timeout wrap context.DeadlineExceeded,
// whatever the driver said.
func timedOut(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}
