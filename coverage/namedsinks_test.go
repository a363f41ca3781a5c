package coverage

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSinksFor(t *testing.T) {
	def := []string{"pg", "es"}
	per := map[string][]string{"orders": {"pg", "es", "lake"}, "audit": {}}
	for _, c := range []struct {
		topic string
		want  []string
	}{
		{"orders", []string{"pg", "es", "lake"}},
		{"audit", []string{}}, // listed with none: none named, not the default
		{"clicks", def},
	} {
		if got := SinksFor(c.topic, def, per); !slices.Equal(got, c.want) {
			t.Errorf("SinksFor(%q) = %q, want %q", c.topic, got, c.want)
		}
	}
	if got := SinksFor("clicks", nil, nil); got != nil {
		t.Errorf("SinksFor without names = %q, want none", got)
	}
}

func TestParseTopicSinks(t *testing.T) {
	for _, c := range []struct {
		in, topic string
		sinks     []string
	}{
		{"orders=pg,es,lake", "orders", []string{"pg", "es", "lake"}},
		{"orders=", "orders", []string{}},
		{"a=b=c", "a", []string{"b=c"}},                 // split at the first =
		{" orders= lake", " orders", []string{" lake"}}, // exact bytes
	} {
		topic, sinks, err := ParseTopicSinks(c.in)
		if err != nil || topic != c.topic || !slices.Equal(sinks, c.sinks) || sinks == nil {
			t.Errorf("ParseTopicSinks(%q) = %q, %q, %v; want %q, %q", c.in, topic, sinks, err, c.topic, c.sinks)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"orders", "not TOPIC=SINK,SINK"},
		{"=pg", "topic name is empty"},
		{"orders=pg,,es", "sink name is empty"},
		{"orders=pg,\x01", "control character"},
	} {
		_, _, err := ParseTopicSinks(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseTopicSinks(%q) = %v, want an error saying %q", c.in, err, c.says)
		}
	}
	if _, _, err := ParseTopicSinks("orders"); !errors.Is(err, ErrTopicSinksSyntax) {
		t.Errorf("no =: %v, want ErrTopicSinksSyntax", err)
	}
	if _, _, err := ParseTopicSinks("=pg"); !errors.Is(err, ErrInvalidDestination) {
		t.Errorf("empty topic: %v, want ErrInvalidDestination", err)
	}
}

func TestAddTopicSinksRefusesATopicTwice(t *testing.T) {
	m := map[string][]string{}
	if err := AddTopicSinks(m, "orders=pg"); err != nil {
		t.Fatal(err)
	}
	err := AddTopicSinks(m, "orders=lake")
	if err == nil || !strings.Contains(err.Error(), `"orders"`) {
		t.Fatalf("second orders: %v, want an error naming it", err)
	}
	if !slices.Equal(m["orders"], []string{"pg"}) {
		t.Fatalf("the first list was changed: %q", m["orders"])
	}
}

func TestValidateNamedSinks(t *testing.T) {
	if err := ValidateNamedSinks([]string{"pg"}, map[string][]string{"orders": {"lake"}, "audit": {}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		def  []string
		per  map[string][]string
		says string
	}{
		{[]string{""}, nil, "sink name is empty"},
		{nil, map[string][]string{"": {"pg"}}, "topic name is empty"},
		{nil, map[string][]string{"orders": {"a\nb"}}, `of topic "orders"`},
	} {
		err := ValidateNamedSinks(c.def, c.per)
		if !errors.Is(err, ErrInvalidDestination) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ValidateNamedSinks(%q, %q) = %v, want ErrInvalidDestination saying %q", c.def, c.per, err, c.says)
		}
	}
}
