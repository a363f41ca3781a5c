package benthos

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// checkChild refuses a child output that acknowledges a message its sink
// does not hold: the covmirror output records what its child
// acknowledged, so such a child would make coverage lead. v is the
// child's config as parsed (an output's object: its component, label and
// processors); path names it in the error.
//
//   - fallback acknowledges a message once any of its outputs took it
//     (a dead-letter queue's ack would be the sink's coverage);
//   - drop_on acknowledges the messages its output failed;
//   - switch drops, and acknowledges, a message no case matches, unless
//     strict_mode is true or a case has no check.
//
// A component it cannot see into (a resource) is not checked; doc.go
// says what else a child must not do.
func checkChild(v any, path string) error {
	if n, ok := v.(*yaml.Node); ok {
		var plain any
		if err := n.Decode(&plain); err != nil {
			return fmt.Errorf("covmirror: %s: reading the child output's config: %w", path, err)
		}
		v = plain
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for name, c := range m {
		switch name {
		case "fallback":
			return fmt.Errorf("covmirror: %s: a fallback acknowledges a message its first output failed once a later output took it, so coverage would claim the sink holds what went elsewhere: give the sink's own output (a failed write to a sink other than raw is acknowledged already and kept as a gap, replayed from raw), or put one covmirror output per tier inside the fallback", path)
		case "drop_on":
			return fmt.Errorf("covmirror: %s: drop_on acknowledges the messages its output failed or dropped, so coverage would claim the sink holds them: leave it out (a failed write to a sink other than raw is acknowledged already and kept as a gap; a stalled one is cut by the covmirror output's timeout)", path)
		case "switch":
			if err := checkSwitch(c, path+".switch"); err != nil {
				return err
			}
		case "broker":
			if b, ok := c.(map[string]any); ok {
				if err := checkList(b["outputs"], path+".broker.outputs"); err != nil {
					return err
				}
			}
		case "retry":
			if r, ok := c.(map[string]any); ok {
				if err := checkChild(r["output"], path+".retry.output"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkSwitch refuses a switch that drops a message no case matches, and
// checks each case's output.
func checkSwitch(v any, path string) error {
	s, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	cases, _ := s["cases"].([]any)
	catchAll := false
	for i, c := range cases {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if check, _ := cm["check"].(string); strings.TrimSpace(check) == "" {
			catchAll = true
		}
		if err := checkChild(cm["output"], fmt.Sprintf("%s.cases.%d.output", path, i)); err != nil {
			return err
		}
	}
	if strict, _ := s["strict_mode"].(bool); !strict && !catchAll {
		return fmt.Errorf("covmirror: %s: a switch drops a message no case matches and acknowledges it, so coverage would claim the sink holds it: set strict_mode: true, or end the cases with one without a check", path)
	}
	return nil
}

func checkList(v any, path string) error {
	list, _ := v.([]any)
	for i, c := range list {
		if err := checkChild(c, fmt.Sprintf("%s.%d", path, i)); err != nil {
			return err
		}
	}
	return nil
}
