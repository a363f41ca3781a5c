package sim

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/postgres"
)

// defaultPostgresURL is the test server (see Config.PostgresURL).
const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func postgresURL(cfg Config) string {
	if cfg.PostgresURL != "" {
		return cfg.PostgresURL
	}
	if u := os.Getenv("COVMIRROR_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultPostgresURL
}

// openPostgres opens the PostgreSQL tier in a fresh schema twice, as two
// processes would: through the faults for the pods, and without them (on
// the run's own pool, which also drops the schema at the end) for the
// checks.
func (w *world) openPostgres(ctx context.Context) error {
	url := postgresURL(w.cfg)
	admin, err := pgxpool.New(ctx, url)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		// The error may quote the URL, password and all: not wrapped.
		return fmt.Errorf("sim: the PostgreSQL of Config.PostgresURL (or COVMIRROR_TEST_POSTGRES_URL) is not reachable; start it (bash .ci/postgres.sh)")
	}
	w.closers = append(w.closers, func() error { admin.Close(); return nil })
	schema := fmt.Sprintf("covmirror_sim_%d_%s", w.cfg.Seed, strings.ToLower(rand.Text()[:8]))
	w.closers = append(w.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		return err
	})
	truth, err := postgres.Open(ctx, postgres.Options{Pool: admin, Schema: schema, Logger: w.cfg.Logger})
	if err != nil {
		return err
	}
	w.closers = append(w.closers, func() error { truth.Close(); return nil })
	// Short backoffs: the aborts are injected, not raced, so waiting
	// longer only slows the run.
	faulty, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: schema, Logger: w.cfg.Logger,
		MaxAttempts: w.f.rates.PostgresMaxAttempts, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	w.closers = append(w.closers, func() error { faulty.Close(); return nil })
	aborts, err := newPgAborts(ctx, faulty, admin, schema, w.f)
	if err != nil {
		return err
	}
	w.table, w.truth = &faultTier{Tier: aborts, f: w.f}, truth
	w.note("durable tier: %s, MaxAttempts %d; the coverage table is its replica", faulty.Name(), w.f.rates.PostgresMaxAttempts)
	return nil
}

// pgAborts is the PostgreSQL tier with its transactions aborted by the
// server as serialization failures (SQLSTATE 40001), which the tier runs
// again up to Options.MaxAttempts. Before an Append it draws a run of
// aborts from the faults' tier stream and arms a trigger on the
// checkpoints table (the Append's first statement) to raise that many;
// its counter is a sequence, which a rollback does not undo.
type pgAborts struct {
	*postgres.Tier
	f     *faults
	admin *pgxpool.Pool
	seq   string // the quoted sequence the trigger counts attempts on
	max   int    // the tier's MaxAttempts
}

func newPgAborts(ctx context.Context, tier *postgres.Tier, admin *pgxpool.Pool, schema string, f *faults) (*pgAborts, error) {
	t := &pgAborts{Tier: tier, f: f, admin: admin, seq: pgx.Identifier{schema, "sim_attempts"}.Sanitize(), max: f.rates.PostgresMaxAttempts}
	fn := pgx.Identifier{schema, "sim_abort"}.Sanitize()
	// A value of at most zero aborts the attempt; the sequence rests at
	// 1 and up, where every attempt passes.
	for _, s := range []string{
		"CREATE SEQUENCE " + t.seq + " MINVALUE -1000 START 1",
		"CREATE FUNCTION " + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('` + t.seq + `') <= 0 THEN
		RAISE EXCEPTION 'sim: injected serialization failure' USING ERRCODE = 'serialization_failure';
	END IF;
	RETURN NEW;
END $$`,
		"CREATE TRIGGER sim_abort BEFORE INSERT ON " + pgx.Identifier{schema, "checkpoints"}.Sanitize() + " FOR EACH ROW EXECUTE FUNCTION " + fn + "()",
	} {
		if _, err := admin.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("sim: arming the injected aborts: %s: %w", s, err)
		}
	}
	return t, nil
}

func (t *pgAborts) Append(ctx context.Context, c durable.Checkpoint) error {
	k := t.f.drawN(t.f.tierRnd, t.f.rates.PostgresAbort, 4)
	if k == 0 {
		return t.Tier.Append(ctx, c)
	}
	if _, err := t.admin.Exec(ctx, "SELECT setval($1, $2)", t.seq, -k); err != nil {
		return fmt.Errorf("sim: arming %d aborts (nothing written): %w", k, err)
	}
	err := t.Tier.Append(ctx, c)
	var last int
	rerr := t.admin.QueryRow(ctx, "SELECT last_value FROM "+t.seq).Scan(&last)
	if rerr == nil {
		_, rerr = t.admin.Exec(ctx, "SELECT setval($1, 1)", t.seq)
	}
	if rerr != nil {
		// Aborts may still be armed: the next Appends may be refused too,
		// which is safe (rolled back) and shows in the trace.
		return fmt.Errorf("sim: disarming the aborts: %w (the append: %v)", rerr, err)
	}
	struck := min(k, last+k) // attempts that reached the trigger, at most k of them aborted
	t.f.add("postgres append aborted (40001)", struck)
	if err != nil && struck >= t.max {
		t.f.add("postgres append gave up (MaxAttempts)", 1)
	}
	return err
}
