//go:build integration

package mirror

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// postgresEnv is a coverage table in a fresh namespace on the test
// PostgreSQL (127.0.0.1:5432, database test, or
// COVMIRROR_TEST_POSTGRES_URL), dropped when the test ends.
func postgresEnv(t *testing.T) *env {
	t.Helper()
	ns := catalogtest.Namespace()
	e := newEnvWith(t, catalogtest.PostgresProps(t), ns)
	t.Cleanup(func() {
		_ = e.cat.DropTable(ctx, e.table.Identifier())
		_ = e.cat.DropNamespace(ctx, []string{ns})
	})
	return e
}

func TestTwoProcessesCheckpointConcurrentlyPostgres(t *testing.T) {
	twoProcesses(t, postgresEnv(t))
}

func TestCrashDuringCheckpointsPostgres(t *testing.T) {
	crashDuringCheckpoints(t, postgresEnv(t), 10)
}

// TestPostgresStoppedPostgres stops a real PostgreSQL under a running owner:
// a private cluster (the machine's initdb and pg_ctl, a free port) so that
// stopping it does not disturb anything else. Checkpoints fail with the
// driver's error while records keep landing locally; after the server is
// started again on the same directory one Sync carries everything.
func TestPostgresStoppedPostgres(t *testing.T) {
	pg := startPrivatePostgres(t)
	props := map[string]string{"type": "sql", "uri": pg.url, "sql.driver": "pgx", "sql.dialect": "postgres",
		"warehouse": "file://" + t.TempDir(), "init_catalog_tables": "true"}
	e := newEnvWith(t, props, "covmirror")
	e.shortCommitTimeout(t)
	outageScenario(t, e, outage{what: "PostgreSQL stopped", begin: pg.stop, end: pg.start, wantErr: "connection refused"})
}

// privatePostgres is a PostgreSQL cluster of the test's own.
type privatePostgres struct {
	bin, data, log, url string
	port                int
	asUser              []string // runuser prefix when running as root
}

func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	inits, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(inits) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			inits = []string{p}
		}
	}
	if len(inits) == 0 {
		t.Fatal("no initdb found: install PostgreSQL's server package (bash .ci/postgres.sh does)")
	}
	sort.Strings(inits)
	pg := &privatePostgres{bin: filepath.Dir(inits[len(inits)-1])}
	dir, err := os.MkdirTemp("", "covmirror-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user to run the private cluster: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		pg.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	pg.data, pg.log = filepath.Join(dir, "data"), filepath.Join(dir, "log")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pg.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	pg.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
	pg.run(t, "initdb", "-D", pg.data, "-A", "trust", "-U", "postgres", "--no-sync")
	pg.start(t)
	t.Cleanup(func() { pg.run(t, "pg_ctl", "-D", pg.data, "-m", "immediate", "-w", "stop") })
	return pg
}

func (pg *privatePostgres) start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off", pg.port, filepath.Dir(pg.data))
	pg.run(t, "pg_ctl", "-D", pg.data, "-l", pg.log, "-o", opts, "-w", "start")
}

// stop is an immediate shutdown: the server goes away as a crashed or
// killed one does, without waiting for clients.
func (pg *privatePostgres) stop(t *testing.T) {
	t.Helper()
	pg.run(t, "pg_ctl", "-D", pg.data, "-m", "immediate", "-w", "stop")
}

func (pg *privatePostgres) run(t *testing.T, name string, args ...string) {
	t.Helper()
	argv := append(append([]string{}, pg.asUser...), append([]string{filepath.Join(pg.bin, name)}, args...)...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil && !(name == "pg_ctl" && args[len(args)-1] == "stop" && strings.Contains(string(out), "Is server running")) {
		log, _ := os.ReadFile(pg.log)
		t.Fatalf("%s: %v\n%s\nserver log:\n%s", strings.Join(argv, " "), err, out, log)
	}
}
