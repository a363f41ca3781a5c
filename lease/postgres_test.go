package lease_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/lease"
)

// pgTTL is short so that the run takes seconds, and long enough that a
// holder starved of CPU under the race detector still stops before a
// contender may start; nothing asserts a time.
const pgTTL = 3 * time.Second

func newPostgres(t *testing.T, deployment, holder string) lease.Lease {
	t.Helper()
	l, err := lease.NewPostgres(catalogtest.PostgresURL(), deployment, lease.Options{Role: "fleet", Holder: holder, TTL: pgTTL})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pgAdmin is a connection for the test's own SQL; an unreachable server
// fails the test.
func pgAdmin(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestPostgresOneHolder: among four contenders on one advisory lock that
// crash (the session ends with the process), close, and lose their session
// to the server (pg_terminate_backend: a partition's end), no contender is
// told it holds the lease while another's holding lasts.
func TestPostgresOneHolder(t *testing.T) {
	seed := testseed.Seed(t)
	admin := pgAdmin(t)
	deployment := catalogtest.Namespace()
	kills := 0
	// kill ends one holder's session from the server's side, as a
	// partition that outlived idle_session_timeout does.
	kill := func(id int, _ time.Duration) {
		tag, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1`, "covmirror lease fleet "+deployment+string(rune('a'+id)))
		if err != nil {
			t.Error(err)
		}
		kills += int(tag.RowsAffected())
	}
	w := chaos(t, seed, 4, 25, pgTTL, func(id int) lease.Lease {
		return newPostgres(t, deployment, deployment+string(rune('a'+id)))
	}, kill)
	t.Logf("%d sessions killed, %d acquisitions", kills, w.takes)
	// In real time on a loaded machine few of the 25 events may find
	// another contender ready; one handover at least must have happened,
	// or the run checked nothing.
	if w.takes < 2 {
		t.Errorf("the lease was taken %d times in 25 crashes, closes and kills: no handover was checked", w.takes)
	}
}

// TestPostgresCloseReleases: a closed holder's lock is granted to the next
// contender, and a second lease of another deployment is held beside it.
func TestPostgresCloseReleases(t *testing.T) {
	deployment := catalogtest.Namespace()
	a, b := newPostgres(t, deployment, "a"), newPostgres(t, deployment, "b")
	other := newPostgres(t, catalogtest.Namespace(), "c")
	defer other.Close()
	ctx := context.Background()
	heldA, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx); err != nil {
		t.Fatalf("another deployment's lease: %v", err)
	}
	got := make(chan context.Context, 1)
	go func() {
		held, err := b.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- held
	}()
	select {
	case <-got:
		t.Fatal("a second contender acquired a held lock")
	case <-time.After(2 * pgTTL):
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if heldA.Err() == nil {
		t.Fatal("the closed holder's context did not end")
	}
	heldB := <-got
	if heldB.Err() != nil {
		t.Fatalf("the new holder's context ended: %v", context.Cause(heldB))
	}
	_ = b.Close()
}

// TestPostgresBadURLHidesThePassword: a connection string pgx refuses
// (a keyword form with a space in an unquoted password) is refused without
// any piece of it.
func TestPostgresBadURLHidesThePassword(t *testing.T) {
	const secret = "Yhh8MkXMgqatxAMTuG1aZnB"
	for _, url := range []string{"host=db user=ops password=xx " + secret + " dbname=x", "postgres://ops:x y" + secret + "@db:notaport/x"} {
		_, err := lease.NewPostgres(url, "deploy", lease.Options{Role: "fleet", Holder: "a"})
		if err == nil {
			t.Errorf("%d-byte connection string accepted", len(url))
			continue
		}
		if strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}
