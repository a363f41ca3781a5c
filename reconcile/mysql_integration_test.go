//go:build integration

package reconcile_test

import (
	"database/sql"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/reconcile"
)

// mysqlDSN is the MariaDB (or MySQL) the integration tests use:
// COVMIRROR_TEST_MYSQL_DSN, else root without a password at
// 127.0.0.1:3306, database test.
func mysqlDSN() string {
	if dsn := os.Getenv("COVMIRROR_TEST_MYSQL_DSN"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

var myAdmin struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// myDB is one handle on the test MariaDB. An unreachable server fails the
// test: it is never skipped.
func myDB(t testing.TB) *sql.DB {
	t.Helper()
	myAdmin.once.Do(func() {
		myAdmin.db, myAdmin.err = sql.Open(reconcile.DriverMySQL, mysqlDSN())
		if myAdmin.err == nil {
			myAdmin.err = myAdmin.db.PingContext(ctx)
		}
	})
	if myAdmin.err != nil {
		t.Fatal("MariaDB at " + mysqlDSN() + " is not reachable (" + myAdmin.err.Error() + "): start one, or set COVMIRROR_TEST_MYSQL_DSN")
	}
	return myAdmin.db
}

// myDialect is a fresh sink table on the test MariaDB, dropped when the
// test ends. Its topic column is binary (VARBINARY), so a topic compares
// byte for byte: under the default collation, and even utf8mb4_bin (PAD
// SPACE), "T" or "t " would match "t"'s rows.
func myDialect(t *testing.T) dialect {
	db := myDB(t)
	table := "covmirror_it_" + strconv.FormatUint(rand.Uint64(), 36)
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (topic varbinary(255), part int, batch_id bigint)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			t.Errorf("drop table %s: %v", table, err)
		}
	})
	return dialect{db: db, table: table, args: [4]string{"?", "?", "?", "?"}, ins: "?, ?, ?", del: "part = ? AND batch_id = ?", sleep: "SLEEP(5)", dual: " FROM DUAL"}
}

func TestMySQLSink(t *testing.T) { scenario(t, myDialect(t)) }

func TestMySQLHostile(t *testing.T) { hostile(t, myDialect(t)) }

// With the topic compared as bytes, a topic differing from "t" only in
// case or trailing space is not answered with "t"'s rows.
func TestMySQLTopicVariantsAreDistinct(t *testing.T) {
	d := myDialect(t)
	d.insert(t, 0, 0, 1, 2)
	c := d.checker(t, d.idsQuery(), reconcile.SQLOptions{})
	for _, topic := range []string{"t", "T", "t ", "t\u00a0", " t"} {
		held, err := c.Held(ctx, coverage.Destination{Sink: "s", Topic: topic}, []coverage.Range{{Start: 0, End: 3}})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]uint64{true: 3, false: 0}[topic == "t"]; held.Batches() != want {
			t.Errorf("topic %q: held %v, want %d batches", topic, held, want)
		}
	}
}

// TestMySQLFromConfig: a mysql checker built from the configuration's keys,
// its DSN from the environment, finds exactly the deleted batches.
func TestMySQLFromConfig(t *testing.T) {
	d := myDialect(t)
	tier := fill(t, d, "mysink")
	cfgs, err := configOf(t, "mysink.kind = sql", "mysink.driver = mysql", "mysink.dsn-env = MY_DSN", "mysink.query = "+d.idsQuery())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := reconcile.Build(cfgs, reconcile.BuildOptions{LookupEnv: envOf(map[string]string{"MY_DSN": mysqlDSN()})})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	rep, err := reconcile.Run(ctx, tier, cs.Checkers, fast())
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "from the configuration", rep.Absent, wantAbsent("mysink"))
}
