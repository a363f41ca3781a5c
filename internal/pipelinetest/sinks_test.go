//go:build integration

package pipelinetest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// pgStore is raw and the warehouse sink: two tables in a fresh schema on
// the test PostgreSQL, dropped when the test ends. A write is an upsert
// keyed by (topic, partition, batch), so a redelivered batch is written
// again harmlessly; a committed statement is PostgreSQL's durable ack.
type pgStore struct {
	pool   *pgxpool.Pool
	schema string
}

func openPostgres(t *testing.T, ctx context.Context) *pgStore {
	t.Helper()
	pool, err := pgxpool.New(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	s := &pgStore{pool: pool, schema: catalogtest.Namespace()}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+s.schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+s.schema+" CASCADE")
	})
	for _, table := range []string{rawSink, pgSink} {
		if _, err := pool.Exec(ctx, "CREATE TABLE "+s.table(table)+
			` (topic text NOT NULL, "partition" int NOT NULL, batch bigint NOT NULL, payload text NOT NULL, PRIMARY KEY (topic, "partition", batch))`); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *pgStore) table(name string) string { return pgx.Identifier{s.schema, name}.Sanitize() }

func (s *pgStore) write(ctx context.Context, table string, p int32, batch uint64, data string) error {
	_, err := s.pool.Exec(ctx, "INSERT INTO "+s.table(table)+` (topic, "partition", batch, payload) VALUES ($1, $2, $3, $4)
		ON CONFLICT (topic, "partition", batch) DO UPDATE SET payload = EXCLUDED.payload`, topic, p, int64(batch), data)
	if err != nil {
		return fmt.Errorf("write %s/%d/%d to %s: %w", topic, p, batch, table, err)
	}
	return nil
}

// read is what table holds of partition p in [start, end): batch -> payload.
func (s *pgStore) read(ctx context.Context, table string, p int32, start, end uint64) (map[uint64]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT batch, payload FROM "+s.table(table)+
		` WHERE topic = $1 AND "partition" = $2 AND batch >= $3 AND batch < $4`, topic, p, int64(start), int64(min(end, 1<<63-1)))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	out := map[uint64]string{}
	for rows.Next() {
		var b int64
		var data string
		if err := rows.Scan(&b, &data); err != nil {
			return nil, err
		}
		out[uint64(b)] = data
	}
	return out, rows.Err()
}

// redisProc is a redis-server the test starts on a free loopback port and
// kills and restarts mid-stream. It runs with an append-only file fsynced
// before every reply (appendfsync always) in the test's directory, so an
// OK is a durable ack: a write Redis answered survives a SIGKILL and the
// restart. Without persistence a restart empties it, and coverage recorded
// after its OKs would lead.
type redisProc struct {
	dir  string
	port int
	cmd  *exec.Cmd
	log  logtest.Buffer
}

func startRedis(t *testing.T) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not installed: the pipeline test runs a Redis sink (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &redisProc{dir: t.TempDir(), port: l.Addr().(*net.TCPAddr).Port}
	_ = l.Close()
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.kill() })
	return r
}

func (r *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// start runs redis-server on the same port and directory, and waits until
// it answers (after replaying its append-only file).
func (r *redisProc) start() error {
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(r.port), "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--logfile", "")
	r.cmd.Stdout, r.cmd.Stderr = &r.log, &r.log
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer: %v; its log: %s", r.addr(), err, r.log.String())
		}
	}
}

// kill SIGKILLs redis-server and waits for it.
func (r *redisProc) kill() error {
	if r.cmd == nil {
		return nil
	}
	cmd := r.cmd
	r.cmd = nil
	if err := killProcess(cmd); err != nil {
		return fmt.Errorf("redis-server %w: %s", err, r.log.String())
	}
	return nil
}

// quietLogger drops go-redis's log lines: a Redis that is down is the
// test's doing, counted in the run's report.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLogger{}) }

// redisSink is the cache sink: a key per batch.
type redisSink struct {
	c      *redis.Client
	prefix string
}

func newRedisSink(r *redisProc) *redisSink {
	// No retries and short timeouts: a write to a Redis that is down fails
	// at once, and the worker moves on (a gap).
	return &redisSink{prefix: "covmirror-pipeline:" + topic + ":", c: redis.NewClient(&redis.Options{Addr: r.addr(),
		MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})}
}

func (s *redisSink) key(p int32, batch uint64) string {
	return s.prefix + strconv.Itoa(int(p)) + ":" + strconv.FormatUint(batch, 10)
}

func (s *redisSink) write(ctx context.Context, p int32, batch uint64, data string) error {
	if err := s.c.Set(ctx, s.key(p, batch), data, 0).Err(); err != nil {
		return fmt.Errorf("write %s/%d/%d to redis: %w", topic, p, batch, err)
	}
	return nil
}

// contents is every batch the Redis holds, per partition: batch -> payload.
func (s *redisSink) contents(ctx context.Context) (map[int32]map[uint64]string, error) {
	out := map[int32]map[uint64]string{}
	iter := s.c.Scan(ctx, 0, s.prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		ps, bs, ok := strings.Cut(strings.TrimPrefix(k, s.prefix), ":")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		b, err2 := strconv.ParseUint(bs, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("redis holds a key the pipeline never writes: %q", k)
		}
		v, err := s.c.Get(ctx, k).Result()
		if err != nil {
			return nil, fmt.Errorf("redis GET %s: %w", k, err)
		}
		if out[int32(p)] == nil {
			out[int32(p)] = map[uint64]string{}
		}
		out[int32(p)][b] = v
	}
	return out, iter.Err()
}
