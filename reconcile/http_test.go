package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/reconcile"
)

// sinkServer is a sink behind a service: it holds every committed batch
// but the deleted ones, and answers GET ?topic=&partition=&start=&end=
// with answer's body.
func sinkServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, held []uint64)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p, err1 := strconv.ParseInt(q.Get("partition"), 10, 32)
		s, err2 := strconv.ParseUint(q.Get("start"), 10, 64)
		e, err3 := strconv.ParseUint(q.Get("end"), 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil || q.Get("topic") != "t" {
			http.Error(w, fmt.Sprint("bad request: ", q, err), http.StatusBadRequest)
			return
		}
		var held []uint64
		for id := s; id < e; id++ {
			in := slices.ContainsFunc(committed, func(r coverage.Range) bool { return r.Contains(id) })
			if in && !slices.Contains(deleted[int32(p)], id) {
				held = append(held, id)
			}
		}
		answer(w, r, held)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func idsAnswer(w http.ResponseWriter, _ *http.Request, held []uint64) {
	fmt.Fprintf(w, `{"batch_ids":%s}`, jsonList(held))
}

func rangesAnswer(w http.ResponseWriter, _ *http.Request, held []uint64) {
	var parts []string
	for _, id := range held {
		parts = append(parts, fmt.Sprintf("[%d,%d]", id, id+1))
	}
	fmt.Fprintf(w, `{"ranges":[%s]}`, strings.Join(parts, ","))
}

func jsonList(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func httpChecker(t testing.TB, srv *httptest.Server, o reconcile.HTTPOptions) reconcile.Checker {
	t.Helper()
	c, err := reconcile.NewHTTP(srv.URL+"/held?topic={topic}&partition={partition}&start={start}&end={end}", o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHTTPSink(t *testing.T) {
	tier := durableTier(t)
	record(t, tier, "svc", "ckpt-1")
	for name, answer := range map[string]func(http.ResponseWriter, *http.Request, []uint64){"batch_ids": idsAnswer, "ranges": rangesAnswer} {
		t.Run(name, func(t *testing.T) {
			c := httpChecker(t, sinkServer(t, answer), reconcile.HTTPOptions{})
			rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"svc": c}, fast())
			if err != nil {
				t.Fatal(err)
			}
			sameRows(t, "claimed-absent", rep.Absent, wantAbsent("svc"))
		})
	}
}

func TestHTTPTopicEscaped(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query().Get("topic")
		fmt.Fprint(w, `{"batch_ids":[]}`)
	}))
	defer srv.Close()
	c, err := reconcile.NewHTTP(srv.URL+"/?topic={topic}&p={partition}", reconcile.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const topic = "a b&c=d/é+?"
	held, err := c.Held(ctx, coverage.Destination{Sink: "svc", Topic: topic}, []coverage.Range{{Start: 1, End: 2}})
	if err != nil || !held.IsEmpty() || got != topic {
		t.Fatalf("topic arrived as %q (want %q), held %v, err %v", got, topic, held, err)
	}
}

func TestHTTPHostile(t *testing.T) {
	tier := durableTier(t)
	record(t, tier, "good", "ckpt-good")
	record(t, tier, "bad", "ckpt-bad")
	good := httpChecker(t, sinkServer(t, idsAnswer), reconcile.HTTPOptions{})
	elsewhere := sinkServer(t, func(w http.ResponseWriter, r *http.Request, _ []uint64) {
		fmt.Fprintf(w, `{"ranges":[[%s,%s]]}`, r.URL.Query().Get("start"), r.URL.Query().Get("end")) // holds everything
	})
	body := func(s string) func(http.ResponseWriter, *http.Request, []uint64) {
		return func(w http.ResponseWriter, _ *http.Request, _ []uint64) { fmt.Fprint(w, s) }
	}
	cases := []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request, []uint64)
		opts   reconcile.HTTPOptions
		want   string
		is     error
	}{
		{"not json", body(`{"batch_ids":[1,`), reconcile.HTTPOptions{}, "unexpected EOF", reconcile.ErrBadAnswer},
		{"unknown field", body(`{"batch_ids":[],"held":[]}`), reconcile.HTTPOptions{}, "unknown field", reconcile.ErrBadAnswer},
		{"field in capitals", body(`{"BATCH_IDS":[]}`), reconcile.HTTPOptions{}, "unknown field", reconcile.ErrBadAnswer},
		{"field twice", body(`{"batch_ids":[],"batch_ids":[]}`), reconcile.HTTPOptions{}, "twice", reconcile.ErrBadAnswer},
		{"both fields", body(`{"batch_ids":[],"ranges":[]}`), reconcile.HTTPOptions{}, "exactly one", reconcile.ErrBadAnswer},
		{"neither field", body(`{}`), reconcile.HTTPOptions{}, "exactly one", reconcile.ErrBadAnswer},
		{"a null beside the other field", body(`{"batch_ids":null,"ranges":[[0,100]]}`), reconcile.HTTPOptions{}, "exactly one", reconcile.ErrBadAnswer},
		{"redirect", func(w http.ResponseWriter, r *http.Request, _ []uint64) {
			http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), http.StatusFound)
		}, reconcile.HTTPOptions{}, "redirect", reconcile.ErrBadAnswer},
		{"null", body(`null`), reconcile.HTTPOptions{}, "exactly one", reconcile.ErrBadAnswer},
		{"trailing data", body(`{"batch_ids":[]} {}`), reconcile.HTTPOptions{}, "after the JSON", reconcile.ErrBadAnswer},
		{"id as string", body(`{"batch_ids":["1"]}`), reconcile.HTTPOptions{}, "cannot unmarshal", reconcile.ErrBadAnswer},
		{"negative id", body(`{"batch_ids":[-1]}`), reconcile.HTTPOptions{}, "cannot unmarshal", reconcile.ErrBadAnswer},
		{"range of three", body(`{"ranges":[[1,2,3]]}`), reconcile.HTTPOptions{}, "3 numbers", reconcile.ErrBadAnswer},
		{"inverted range", body(`{"ranges":[[5,1]]}`), reconcile.HTTPOptions{}, "invalid", reconcile.ErrBadAnswer},
		{"status 500", func(w http.ResponseWriter, _ *http.Request, _ []uint64) { http.Error(w, "down", 500) }, reconcile.HTTPOptions{}, "500", reconcile.ErrBadAnswer},
		{"oversize", func(w http.ResponseWriter, _ *http.Request, held []uint64) {
			fmt.Fprintf(w, `{"batch_ids":%s%s}`, jsonList(held), strings.Repeat(" ", 2048))
		}, reconcile.HTTPOptions{MaxBody: 1024}, "over 1024 bytes", reconcile.ErrBadAnswer},
		{"id outside", func(w http.ResponseWriter, _ *http.Request, held []uint64) {
			fmt.Fprintf(w, `{"batch_ids":%s}`, jsonList(append(held, 1000)))
		}, reconcile.HTTPOptions{}, "batch id 1000 is outside", reconcile.ErrOutOfRange},
		{"range outside", body(`{"ranges":[[0,1000]]}`), reconcile.HTTPOptions{}, "outside", reconcile.ErrOutOfRange},
		{"slow", func(w http.ResponseWriter, r *http.Request, _ []uint64) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, reconcile.HTTPOptions{Timeout: 100 * time.Millisecond}, "deadline", context.DeadlineExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := httpChecker(t, sinkServer(t, c.answer), c.opts)
			start := time.Now()
			rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"good": good, "bad": bad}, fast())
			mustFailNaming(t, rep, err, "bad", c.want)
			if !errors.Is(err, c.is) {
				t.Fatalf("error does not wrap %v: %v", c.is, err)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("the run took %v: the timeout did not cut the request", time.Since(start))
			}
			sameRows(t, "the good sink beside it", rep.Absent, wantAbsent("good"))
		})
	}
}

func TestNewHTTPRefusesANonHTTPTemplate(t *testing.T) {
	for _, tmpl := range []string{"", "file:///etc/{topic}", "ftp://h/{start}", "http:///{end}",
		"http://{topic}/x", "http://h{partition}.example/x", "http://u:{start}@h/x", "https://h:{end}/", "{topic}://h/x"} {
		if _, err := reconcile.NewHTTP(tmpl, reconcile.HTTPOptions{}); err == nil {
			t.Errorf("NewHTTP(%q) took it", tmpl)
		}
	}
}

// A topic of dots alone is escaped, so it stays in its path segment rather
// than being resolved as "." or "..".
func TestHTTPDotTopicStaysInItsSegment(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.EscapedPath())
		fmt.Fprint(w, `{"batch_ids":[]}`)
	}))
	defer srv.Close()
	c, err := reconcile.NewHTTP(srv.URL+"/topics/{topic}/partitions/{partition}/held?start={start}&end={end}", reconcile.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	topics := []string{"..", ".", "...", "a.b"}
	for _, topic := range topics {
		if _, err := c.Held(ctx, coverage.Destination{Sink: "s", Topic: topic}, []coverage.Range{{Start: 0, End: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"/topics/%2E%2E/partitions/0/held", "/topics/%2E/partitions/0/held", "/topics/%2E%2E%2E/partitions/0/held", "/topics/a.b/partitions/0/held"}
	if !slices.Equal(paths, want) {
		t.Fatalf("paths %q, want %q", paths, want)
	}
}

// The largest body limit is refused rather than overflowing the read's
// limit (which read nothing); one below it reads the answer.
func TestHTTPLargestBodyLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"ranges":[[0,10]]}`) }))
	defer srv.Close()
	tmpl := srv.URL + "/?t={topic}&p={partition}&s={start}&e={end}"
	if _, err := reconcile.NewHTTP(tmpl, reconcile.HTTPOptions{MaxBody: math.MaxInt64}); err == nil {
		t.Fatal("MaxBody = MaxInt64 taken")
	}
	c, err := reconcile.NewHTTP(tmpl, reconcile.HTTPOptions{MaxBody: math.MaxInt64 - 1})
	if err != nil {
		t.Fatal(err)
	}
	held, err := c.Held(ctx, coverage.Destination{Sink: "s", Topic: "t"}, []coverage.Range{{Start: 0, End: 10}})
	if err != nil || held.Batches() != 10 {
		t.Fatalf("held %v, err %v", held, err)
	}
}
