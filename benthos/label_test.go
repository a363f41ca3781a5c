package benthos

import (
	"strings"
	"testing"
	"unicode"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// TestAMessagesSinkIsBoundedInLabelsAndQuotedInLogs: an interpolated
// sink comes from a message, whatever it carries. One that is no valid
// sink name (a line break, a terminal's escape, 100 KiB) is never a
// metric label (a label per message would grow the metrics without
// bound), and the log lines name it quoted and short; a valid one is its
// label as before.
func TestAMessagesSinkIsBoundedInLabelsAndQuotedInLogs(t *testing.T) {
	interp := func(s string) *service.InterpolatedString {
		is, err := service.NewInterpolatedString(s)
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	o := &output{sink: interp(`${! meta("sink") }`), topic: interp("orders"), partition: interp(`${! meta("partition") }`), batchID: interp("7")}
	for _, c := range []struct {
		sink, partition string
		label           string
	}{
		{"lake\nlevel=ERROR forged \x1b[2J", "0", ""},
		{"lake\u009b31m", "x", ""},
		{strings.Repeat("s", 100<<10), "0", ""},
		{"lake", "x", "lake"},
		{"lake", "0", "lake"},
	} {
		m := service.NewMessage([]byte("{}"))
		m.MetaSet("sink", c.sink)
		m.MetaSet("partition", c.partition)
		k, _ := o.key(m)
		if got := k.sinkLabel(); got != c.label {
			t.Errorf("sink %.40q, partition %q: label %.40q; want %q", c.sink, c.partition, got, c.label)
		}
		name := o.sinkName(service.MessageBatch{m})
		if i := strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 || len(name) > 200 {
			t.Errorf("sink %.40q is logged as %.80q (%d bytes): want it quoted and short", c.sink, name, len(name))
		}
	}
}

// TestAMessageNamingAControlCharacterIsRefused: a message's sink or topic
// passes coverage.ValidName, as every write surface's does: one holding a
// line break, DEL or a C1 control is refused (never recorded), its name
// quoted in the error; a plain one is its key.
func TestAMessageNamingAControlCharacterIsRefused(t *testing.T) {
	interp := func(s string) *service.InterpolatedString {
		is, err := service.NewInterpolatedString(s)
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	o := &output{sink: interp(`${! meta("sink") }`), topic: interp(`${! meta("topic") }`), partition: interp("0"), batchID: interp("7")}
	for _, c := range []struct {
		sink, topic string
		ok          bool
	}{
		{"lake", "t\nforged/orders/0 [0,1) claimed but absent: 1 batches", false},
		{"lake", "orders\x7f", false},
		{"lake\u0085", "orders", false},
		{"lake", "ordres é", true},
	} {
		m := service.NewMessage([]byte("{}"))
		m.MetaSet("sink", c.sink)
		m.MetaSet("topic", c.topic)
		k, err := o.key(m)
		if (err == nil) != c.ok {
			t.Errorf("sink %q, topic %q: %v; want ok %v", c.sink, c.topic, err, c.ok)
		} else if err != nil && strings.ContainsAny(err.Error(), "\n\x7f\u0085") {
			t.Errorf("the error prints the name raw: %q", err)
		} else if err == nil && (k.d.Sink != c.sink || k.d.Topic != c.topic) {
			t.Errorf("key %+v, want sink %q topic %q", k, c.sink, c.topic)
		}
	}
}
