package charttest

import (
	"testing"
)

// TestNetworkPolicyNeverAdmitsEveryone: an ingress rule whose from is
// empty or missing admits every source (Kubernetes' NetworkPolicy
// semantics), and a peer with no selector is refused by the API server. So
// networkPolicy.metricsFrom of [], null or [{}] would open the metrics
// port to the whole cluster, or render a policy the cluster refuses: each
// must be refused when rendering, naming the value.
func TestNetworkPolicyNeverAdmitsEveryone(t *testing.T) {
	ch := loadChart(t)
	for _, vals := range []string{
		"networkPolicy: {metricsFrom: []}",
		"networkPolicy: {metricsFrom: null}",
		"networkPolicy: {metricsFrom: [{}]}",
		"networkPolicy: {metricsFrom: [{podSelector: {matchLabels: {app: prometheus}}}, {}]}",
	} {
		if _, err := render(t, ch, parse(t, vals)); err == nil {
			t.Errorf("values %s rendered: the metrics port would admit every source or the API server would refuse the policy", vals)
		}
	}
	for _, vals := range []string{
		"networkPolicy: {metricsFrom: [{podSelector: {}}]}",
		"networkPolicy: {metricsFrom: [{ipBlock: {cidr: 10.0.0.0/8}}]}",
		"networkPolicy: {enabled: false, metricsFrom: []}",
	} {
		if _, err := render(t, ch, parse(t, vals)); err != nil {
			t.Errorf("values %s: %v", vals, err)
		}
	}
}
