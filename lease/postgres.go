package lease

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/covmirror/covmirror/internal/redact"
)

// pgBackend is the lease as a session-level advisory lock on a connection
// of its own. It must reach the server directly, or through a pooler in
// session mode: a transaction-mode pooler hands the session, and the lock
// with it, to other clients.
type pgBackend struct {
	opts  Options
	url   string
	where string // the database and the deployment, for logs
	key   int64
	conn  *pgx.Conn
	// granted is when this session was granted the lock; zero: not.
	granted time.Time
}

// NewPostgres returns a contender for the advisory lock of (deployment,
// Role) in the database at url; deployment is the schema of the
// deployment's coverage tables, so that deployments sharing a database
// hold separate leases.
func NewPostgres(url, deployment string, opts Options) (Lease, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the connection string, password and all.
		return nil, errors.New("lease: the PostgreSQL URL does not parse (not shown: it may hold a password); give postgres://USER@HOST:PORT/DB, with the password in PGPASSWORD or a .pgpass file")
	}
	if deployment == "" {
		return nil, errors.New("lease: NewPostgres: name the deployment (its schema)")
	}
	// Remembered for every later output (the lease's logs too): a server
	// may quote the password it was sent.
	if cfg.Password != cfg.User {
		// A password that is the role's name hides nothing, and
		// redacting it would hide the role every error names.
		redact.Remember(cfg.Password)
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "covmirror lease\x00%s\x00%s", deployment, opts.Role)
	b := &pgBackend{opts: opts, url: url, key: int64(h.Sum64()),
		where: fmt.Sprintf("the advisory lock of %q/%q in postgres %q, database %q", deployment, opts.Role, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.Database)}
	return newDriver(opts, b), nil
}

func (b *pgBackend) name() string { return b.where }

func (b *pgBackend) connect(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(b.url)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = "covmirror lease " + b.opts.Role + " " + b.opts.Holder
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		// pgx's error names the database unquoted.
		return fmt.Errorf("lease: connecting to %s: %w", b.where, redact.Error(err))
	}
	// The server ends the session of a holder silent for a TTL (a
	// partition, a paused process), freeing the lock; a holder renews
	// every RenewEvery, well within it. Servers before 14 lack the
	// setting: the lock then goes when TCP gives the session up.
	ms := b.opts.TTL.Milliseconds()
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET idle_session_timeout = %d", ms)); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			_ = conn.Close(ctx)
			return fmt.Errorf("lease: setting up the session on %s: %w", b.where, err)
		}
		b.opts.Logger.Debug("lease: the server has no idle_session_timeout; a silent holder's lock goes when TCP drops its session", "err", err)
	}
	b.conn = conn
	return nil
}

func (b *pgBackend) try(ctx context.Context) (bool, error) {
	if b.conn == nil {
		if err := b.connect(ctx); err != nil {
			return false, err
		}
	}
	if !b.granted.IsZero() {
		// Granted earlier: the lock must still be this session's, and a
		// TTL must have passed since.
		if lost, err := b.renew(ctx); lost || err != nil {
			b.granted = time.Time{}
			return false, err
		}
		return time.Since(b.granted) >= b.opts.TTL, nil
	}
	var ok bool
	if err := b.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", b.key).Scan(&ok); err != nil {
		b.close()
		return false, fmt.Errorf("lease: trying %s: %w", b.where, err)
	}
	if ok {
		// The server frees a lock when it ends a session (a partition, a
		// kill) before that session's holder notices, which it does by
		// its renewal deadline at the latest: the work starts a TTL
		// after the grant, when any such holder has stopped.
		b.granted = time.Now()
	}
	return false, nil
}

// renew checks the session still holds the lock: a query on the
// connection proves the session lives, and pg_locks that the lock is
// still its own.
func (b *pgBackend) renew(ctx context.Context) (bool, error) {
	if b.conn == nil {
		return true, errors.New("lease: the connection is closed")
	}
	var held bool
	err := b.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
		AND granted AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1)`, b.key).Scan(&held)
	if err != nil {
		// A session in doubt is a lock in doubt: end it, so that the
		// server frees the lock if it still has it.
		b.close()
		return true, fmt.Errorf("lease: renewing %s: %w", b.where, err)
	}
	if !held {
		b.close()
		return true, fmt.Errorf("lease: %s is no longer held by this session", b.where)
	}
	return false, nil
}

// drop ends the session, which frees the lock (released or not: a
// session's end is its release).
func (b *pgBackend) drop(ctx context.Context, release bool) error {
	if b.conn == nil {
		return nil
	}
	var err error
	if release {
		_, err = b.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", b.key)
	}
	b.close()
	return err
}

func (b *pgBackend) close() {
	b.granted = time.Time{}
	if b.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.RenewEvery)
	defer cancel()
	_ = b.conn.Close(ctx)
	b.conn = nil
}
