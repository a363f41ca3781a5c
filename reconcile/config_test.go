package reconcile_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/reconcile"
)

// configOf reads "SINK.KEY = VALUE" lines as the configuration file's
// reconcile.* lines are read.
func configOf(t *testing.T, lines ...string) ([]reconcile.Config, error) {
	t.Helper()
	entries := map[string]string{}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		if err := reconcile.AddConfigEntry(entries, strings.TrimSpace(k)+"="+strings.TrimSpace(v)); err != nil {
			return nil, err
		}
	}
	return reconcile.ParseConfig(entries)
}

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// TestConfigEveryKind: one configuration with a checker of each kind, each
// built from its keys and credentials from the environment, finds exactly
// the batches deleted from its sink.
func TestConfigEveryKind(t *testing.T) {
	tier := durableTier(t)
	d := pgDialect(t)
	for _, p := range []int32{0, 1} {
		for _, r := range committed {
			d.insert(t, p, idsOf(r)...)
		}
	}
	for p, ids := range deleted {
		for _, id := range ids {
			if _, err := d.db.ExecContext(ctx, "DELETE FROM "+d.table+" WHERE "+d.del, p, int64(id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cat, _, ident := icebergSink(t)
	for _, p := range []int32{0, 1} {
		for _, r := range committed {
			var ids []uint64
			for _, id := range idsOf(r) {
				if !containsID(deleted[p], id) {
					ids = append(ids, id)
				}
			}
			appendRows(t, cat, ident, p, ids...)
		}
	}
	const token = "tok-3f9a1c"
	srv := sinkServer(t, func(w http.ResponseWriter, r *http.Request, held []uint64) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		idsAnswer(w, r, held)
	})
	for _, s := range []string{"pgsink", "web", "lake"} {
		record(t, tier, s, "ckpt-"+s)
	}
	cfgs, err := configOf(t,
		"pgsink.kind = sql", "pgsink.driver = pgx", "pgsink.dsn-env = SINK_DSN", "pgsink.timeout = 10s",
		"pgsink.query = "+d.idsQuery(),
		"web.kind = http", "web.url = "+srv.URL+"/held?topic={topic}&partition={partition}&start={start}&end={end}", "web.token-env = WEB_TOKEN",
		"lake.kind = iceberg", "lake.table = "+strings.Join(ident, "."), "lake.topic-column = topic", "lake.partition-column = part")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := reconcile.Build(cfgs, reconcile.BuildOptions{Catalog: cat,
		LookupEnv: envOf(map[string]string{"SINK_DSN": catalogtest.PostgresURL(), "WEB_TOKEN": token + "\n"})})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	rep, err := reconcile.Run(ctx, tier, cs.Checkers, fast())
	if err != nil {
		t.Fatal(err)
	}
	var want []reconcile.Row
	for _, s := range []string{"lake", "pgsink", "web"} {
		want = append(want, wantAbsent(s)...)
	}
	sameRows(t, "every kind", rep.Absent, want)

	// Counting: the pieces holding a deleted batch, wholly.
	cfgs, err = configOf(t, "pgsink.kind = sql", "pgsink.driver = pgx", "pgsink.dsn-env = SINK_DSN", "pgsink.count = true", "pgsink.query = "+d.countQuery())
	if err != nil {
		t.Fatal(err)
	}
	cs2, err := reconcile.Build(cfgs, reconcile.BuildOptions{LookupEnv: envOf(map[string]string{"SINK_DSN": catalogtest.PostgresURL()})})
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	rep, err = reconcile.Run(ctx, tier, cs2.Checkers, fast())
	if err != nil || len(rep.Absent) == 0 || rep.Absent[0] != (reconcile.Row{Sink: "pgsink", Topic: "t", Partition: 0, Start: 0, End: 5, Kind: reconcile.KindClaimedAbsent}) {
		t.Fatalf("counting: %v %+v", err, rep.Absent)
	}
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestConfigRefused: every bad configuration is an error naming the sink
// and the key, and none repeats a credential it was given.
func TestConfigRefused(t *testing.T) {
	const secret = "pa55-Secret-9"
	sqlOK := []string{"s.kind = sql", "s.driver = pgx", "s.dsn-env = S_DSN", "s.query = SELECT 1"}
	cases := []struct {
		name  string
		lines []string
		env   map[string]string
		want  string
	}{
		{"unknown kind", []string{"s.kind = kafka"}, nil, `reconcile.s.kind: kind "kafka" is not sql, http or iceberg`},
		{"no kind", []string{"s.query = SELECT 1"}, nil, `reconcile.s.kind: kind "" is not`},
		{"unknown key", []string{"s.kind = sql", "s.qeury = SELECT 1"}, nil, `reconcile.s.qeury: unknown key "qeury"`},
		{"key of another kind", append([]string{"s.url = http://x/"}, sqlOK...), nil, "reconcile.s.url: not a key of kind sql"},
		{"missing query", sqlOK[:3], nil, "reconcile.s.query is missing"},
		{"missing dsn-env", []string{"s.kind = sql", "s.driver = mysql", "s.query = q"}, nil, "reconcile.s.dsn-env is missing"},
		{"bad driver", []string{"s.kind = sql", "s.driver = oracle", "s.dsn-env = E", "s.query = q"}, nil, `reconcile.s.driver: "oracle" is not pgx`},
		{"a DSN in the file", []string{"s.kind = sql", "s.dsn = postgres://u:" + secret + "@h/db"}, nil, "reconcile.s.dsn: a credential is never written in the configuration"},
		{"a token in the file", []string{"s.kind = http", "s.token = " + secret}, nil, "name the variable with reconcile.s.token-env"},
		{"a password in the file", []string{"s.kind = sql", "s.password = " + secret}, nil, "reconcile.s.password: a credential"},
		{"a DSN where its variable's name belongs", []string{"s.kind = sql", "s.driver = pgx", "s.dsn-env = postgres://u:" + secret + "@h/db", "s.query = q"}, nil,
			"reconcile.s.dsn-env is not an environment variable's name"},
		{"credentials in the URL", []string{"s.kind = http", "s.url = https://u:" + secret + "@h/x?s={start}"}, nil, "reconcile.s.url: the URL template https://h/x holds an @: credentials"},
		{"bad timeout", append([]string{"s.timeout = soon"}, sqlOK...), nil, `reconcile.s.timeout: "soon" is not a positive duration`},
		{"bad count", append([]string{"s.count = maybe"}, sqlOK...), nil, `reconcile.s.count: "maybe": use true or false`},
		{"bad table", []string{"s.kind = iceberg", "s.table = ns..t"}, nil, "reconcile.s.table"},
		{"variable unset", sqlOK, nil, "reconcile.s.dsn-env names the environment variable \"S_DSN\", which is unset or empty"},
		{"variable empty", sqlOK, map[string]string{"S_DSN": " "}, "\"S_DSN\", which is unset or empty"},
		{"token variable unset", []string{"s.kind = http", "s.url = http://h/x", "s.token-env = T"}, nil, "reconcile.s.token-env names the environment variable \"T\""},
		{"iceberg without a catalog", []string{"s.kind = iceberg", "s.table = ns.t"}, nil, `sink "s": an iceberg checker needs the catalog`},
		{"an entry given twice", []string{"s.kind = sql", "s.kind = http"}, nil, "reconcile.s.kind is given twice"},
		{"an invalid sink", []string{".kind = sql"}, nil, "is not reconcile.SINK.KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfgs, err := configOf(t, c.lines...)
			if err == nil {
				var cs *reconcile.Checkers
				cs, err = reconcile.Build(cfgs, reconcile.BuildOptions{LookupEnv: envOf(c.env)})
				if err == nil {
					cs.Close()
					t.Fatalf("accepted: %+v", cfgs)
				}
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the credential: %v", err)
			}
		})
	}
}

// TestConfigNeverShowsTheDSNPassword: a check that fails to connect is an
// error naming the sink, and neither it nor the run's log shows the DSN's
// password, in PostgreSQL's URL and key=value forms and MySQL's.
func TestConfigNeverShowsTheDSNPassword(t *testing.T) {
	const pw = "Zq8-hunter2-secret"
	tier := durableTier(t)
	record(t, tier, "s", "ckpt-1")
	for _, c := range []struct{ driver, dsn string }{
		{"pgx", "postgres://covmirror:" + pw + "@127.0.0.1:1/test?connect_timeout=2"},
		{"pgx", "host=127.0.0.1 port=1 user=covmirror password=" + pw + " dbname=test connect_timeout=2"},
		{"pgx", "postgres://covmirror:" + pw + "@127.0.0.1:notaport/test"},
		{"mysql", "covmirror:" + pw + "@tcp(127.0.0.1:1)/test?timeout=2s"},
		{"mysql", "covmirror:" + pw + "@tcp(127.0.0.1:1)/test?badoption=%zz"},
	} {
		t.Run(c.driver, func(t *testing.T) {
			cfgs, err := configOf(t, "s.kind = sql", "s.driver = "+c.driver, "s.dsn-env = S_DSN", "s.query = SELECT 1")
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			cs, err := reconcile.Build(cfgs, reconcile.BuildOptions{LookupEnv: envOf(map[string]string{"S_DSN": c.dsn})})
			if err == nil {
				defer cs.Close()
				o := fast()
				o.Logger = slog.New(slog.NewTextHandler(&log, nil))
				var rep reconcile.Report
				rep, err = reconcile.Run(ctx, tier, cs.Checkers, o)
				mustFailNaming(t, rep, err, "s", "failed")
			}
			if err == nil {
				t.Fatal("no error")
			}
			shown := fmt.Sprint(err) + log.String()
			if strings.Contains(shown, pw) || strings.Contains(shown, strings.ReplaceAll(pw, "-", "%2D")) {
				t.Fatalf("the password is shown:\n%s", shown)
			}
			if !strings.Contains(shown, `"s"`) {
				t.Fatalf("the sink is not named:\n%s", shown)
			}
		})
	}
}

// AddConfigEntry's and ParseConfig's keys are docs/reconcile.md's: a sink name
// with dots keeps them, its key is after the last.
func TestConfigSinkWithDots(t *testing.T) {
	cfgs, err := configOf(t, "eu.lake.kind = iceberg", "eu.lake.table = ns.t")
	if err != nil || len(cfgs) != 1 || cfgs[0].Sink != "eu.lake" || cfgs[0].Table != "ns.t" {
		t.Fatalf("%v %+v", err, cfgs)
	}
	if !reconcile.NeedsCatalog(cfgs) {
		t.Fatal("an iceberg checker needs the catalog")
	}
	_ = coverage.RawSink
}
