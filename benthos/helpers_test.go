package benthos_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"gopkg.in/yaml.v3"

	"github.com/covmirror/covmirror/benthos"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/tier"
)

// env is a Benthos environment with Benthos' components and the plugins.
func env(t testing.TB) *service.Environment {
	t.Helper()
	e, err := newEnv()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newEnv() (*service.Environment, error) {
	e := service.NewEnvironment()
	return e, benthos.Register(e)
}

// build builds a stream from YAML, failing t on an error.
func build(t testing.TB, yaml string) *service.Stream {
	t.Helper()
	s, err := buildErr(t, yaml)
	if err != nil {
		t.Fatalf("building the stream: %v\n%s", err, yaml)
	}
	return s
}

func buildErr(t testing.TB, yaml string) (*service.Stream, error) {
	t.Helper()
	b := env(t).NewStreamBuilder()
	if err := b.SetYAML(yaml); err != nil {
		return nil, err
	}
	logs := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		logs = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	b.SetLogger(logs)
	return b.Build()
}

// run runs a stream until its input ends (bounded, so that a hang fails
// rather than stalls the suite).
func run(t testing.TB, yaml string) {
	t.Helper()
	s := build(t, yaml)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatalf("running the stream: %v", err)
	}
}

// runErr builds and runs a stream that is expected to fail: its
// components are built when it runs.
func runErr(t testing.TB, yaml string) error {
	t.Helper()
	s, err := buildErr(t, yaml)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.Run(ctx)
}

// sinkServer is an HTTP sink: it holds the ids of the messages it
// answered 200, and refuses a request when refuse says so (before it
// holds anything of it).
type sinkServer struct {
	*httptest.Server
	mu       sync.Mutex
	held     map[uint64]string // id -> body
	attempts map[uint64]int
	refuse   func(id uint64, attempt int) bool
	delay    time.Duration
	status   int // a refusal's status code; zero: 503
}

func newSinkServer(t testing.TB, refuse func(id uint64, attempt int) bool) *sinkServer {
	return newSlowSinkServer(t, refuse, 0)
}

// newSlowSinkServer is a sink server that takes delay over each write.
func newSlowSinkServer(t testing.TB, refuse func(id uint64, attempt int) bool, delay time.Duration) *sinkServer {
	s := &sinkServer{held: map[uint64]string{}, attempts: map[uint64]int{}, refuse: refuse, delay: delay}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *sinkServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet { // GET /batch/ID: a replay reads raw back
		var id uint64
		if _, err := fmt.Sscanf(r.URL.Path, "/batch/%d", &id); err != nil {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		body, ok := s.held[id]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, body)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m struct{ ID uint64 }
	if err := json.Unmarshal(data, &m); err != nil {
		http.Error(w, "not a message: "+err.Error(), http.StatusBadRequest)
		return
	}
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[m.ID]++
	if s.refuse != nil && s.refuse(m.ID, s.attempts[m.ID]) {
		http.Error(w, "refused", cmp.Or(s.status, http.StatusServiceUnavailable))
		return
	}
	s.held[m.ID] = string(data)
}

// attempt is how many writes of id the server answered.
func (s *sinkServer) attempt(id uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[id]
}

// writes is how many writes the server answered, refused or not.
func (s *sinkServer) writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.attempts {
		n += a
	}
	return n
}

// ids are the ids the server holds.
func (s *sinkServer) ids() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.held))
}

// obj is a piece of a stream's config, marshalled to YAML by stream.
type obj = map[string]any

// stream is the YAML of a stream from input to output.
func stream(t testing.TB, input, output obj) string {
	t.Helper()
	y, err := streamYAML(input, output)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func streamYAML(input, output obj) (string, error) {
	b, err := yaml.Marshal(obj{"input": input, "output": output})
	return string(b), err
}

// httpOutput is an http_client child posting to s, without retries of its
// own: a refusal is the covmirror output's to handle.
func httpOutput(s *sinkServer) obj {
	return obj{"http_client": obj{"url": s.URL + "/write", "verb": "POST", "retries": 0, "max_in_flight": 4}}
}

// covmirrorOutput is a covmirror output of sink with child, into the pod
// on state.
func covmirrorOutput(sink string, reference bool, state string, child obj) obj {
	return obj{"covmirror": obj{"sink": sink, "reference": reference, "topic": "orders", "partition": "0", "batch_id": "${! this.id }",
		"pod": obj{"state": state, "interval": "1h"}, "output": child}}
}

// fanOut is a fan_out broker of outputs.
func fanOut(outputs ...obj) obj {
	return obj{"broker": obj{"pattern": "fan_out", "outputs": outputs}}
}

// generate is an input of n messages {"id": 0..n-1} in batches of size.
func generate(n, size int) obj {
	return obj{"generate": obj{"count": n, "interval": "", "batch_size": size, "mapping": `root = {"id": counter() - 1}`}}
}

// committed is the committed coverage of the pod on state, by sink.
func committed(t testing.TB, state string) map[string][]uint64 {
	t.Helper()
	table, err := tier.OpenTable(context.Background(), tier.Settings{State: state, Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := table.Coverage(context.Background(), durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]uint64{}
	for d, set := range all {
		if d.Topic != "orders" || d.Partition != 0 {
			t.Fatalf("coverage of %v: the stream writes orders/0 only", d)
		}
		for r := range set.All() {
			for id := r.Start; id < r.End; id++ {
				out[d.Sink] = append(out[d.Sink], id)
			}
		}
	}
	return out
}

// upTo is 0..n-1.
func upTo(n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

// chosen picks each of 0..n-1 with probability p.
func chosen(rng *rand.Rand, n int, p float64) map[uint64]bool {
	out := map[uint64]bool{}
	for i := range n {
		if rng.Float64() < p {
			out[uint64(i)] = true
		}
	}
	return out
}

// subset reports whether every id of a is in b (both sorted).
func subset(a, b []uint64) bool {
	for _, id := range a {
		if _, ok := slices.BinarySearch(b, id); !ok {
			return false
		}
	}
	return true
}

// short is ids for a failure message.
func short(ids []uint64) string {
	s := fmt.Sprint(ids)
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return strings.TrimSpace(s)
}
