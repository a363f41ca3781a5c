package queries

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// The process's one DuckDB instance, opened on first use. Starting an
// instance (its catalog of built-in functions) took longer than binding a
// snapshot of 100,000 ranges; a DB instead attaches an in-memory database
// of its own to this one and makes it its connection's default, so what it
// creates, and any table a query text creates, is its own and goes when it
// closes.
var instance struct {
	once      sync.Once
	connector *duckdb.Connector
	err       error
	next      atomic.Uint64 // names the attached databases
}

// keepOpen hides the instance's Close from sql.DB, whose Close calls a
// connector's: closing one DB must not close the others' instance.
type keepOpen struct{ driver.Connector }

// defaultCatalog is the instance's own in-memory database, which a DB's
// connection returns to before detaching its own.
const defaultCatalog = "memory"

// openDuckDB attaches a fresh in-memory database to the shared instance and
// returns a connection whose default it is, and its name.
func openDuckDB(ctx context.Context) (*sql.DB, *sql.Conn, string, error) {
	instance.once.Do(func() {
		instance.connector, instance.err = duckdb.NewConnector("", nil)
	})
	if instance.err != nil {
		return nil, nil, "", fmt.Errorf("queries: opening DuckDB: %w", instance.err)
	}
	db := sql.OpenDB(keepOpen{instance.connector})
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, nil, "", fmt.Errorf("queries: opening DuckDB: %w", err)
	}
	catalog := fmt.Sprintf("covmirror_%d", instance.next.Add(1))
	// Not cut short by ctx: interrupted between ATTACH and USE, the database
	// would stay attached to the instance with nothing to detach it.
	if _, err := conn.ExecContext(context.Background(), `ATTACH ':memory:' AS `+catalog+`; USE `+catalog); err != nil {
		_ = conn.Close()
		_ = db.Close()
		return nil, nil, "", fmt.Errorf("queries: attaching an in-memory DuckDB database: %w", err)
	}
	return db, conn, catalog, nil
}

// use makes the DB's own database its connection's default again, before
// each query: a query text may have switched it (USE), and the relations
// it binds and reads must be its own, never another DB's.
func (q *DB) use(ctx context.Context) error {
	if q.catalog == "" {
		return nil // closed, or a DuckDB of its own (as tests build)
	}
	if _, err := q.conn.ExecContext(ctx, `USE `+q.catalog); err != nil {
		return fmt.Errorf("queries: returning to DuckDB database %s: %w", q.catalog, err)
	}
	return nil
}

// Close releases the DB's database in the shared DuckDB instance. Closing
// twice is harmless.
func (q *DB) Close() error {
	var err error
	if q.catalog != "" {
		if _, err = q.conn.ExecContext(context.Background(), `USE `+defaultCatalog+`; DETACH `+q.catalog); err != nil {
			err = fmt.Errorf("queries: detaching DuckDB database %s: %w", q.catalog, err)
		}
		q.catalog = ""
	}
	_ = q.conn.Close()
	if cerr := q.db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("queries: closing DuckDB: %w", cerr)
	}
	return err
}
