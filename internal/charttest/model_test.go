package charttest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
)

// choice is one draw of values and what the model says of it.
type choice struct {
	vals map[string]any
	// refusals are the messages of which the chart must fail with one;
	// none: it must render.
	refusals []string
	// objects are KIND/NAME of what it must render, sorted.
	objects []string
	// fleet is serve's --fleet in the sidecars; token: /metrics wants one.
	fleet string
	token bool
}

// TestRandomValues draws values at random from a seed and checks the
// chart against a reference model of it: the model says whether the
// values are refused (and with which message) or which objects render,
// and what the sidecars' fleet role and the PodMonitor's token are; every
// rendering must then pass the cluster's checks. Replay a failure with
// the -seed it prints.
func TestRandomValues(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	ch := loadChart(t)
	for i := range 60 {
		c := draw(rng)
		manifests, err := render(t, ch, c.vals)
		if len(c.refusals) > 0 {
			if err == nil || !slices.ContainsFunc(c.refusals, func(r string) bool { return strings.Contains(err.Error(), r) }) {
				t.Fatalf("draw %d (%v): want a refusal saying one of %q, got %v", i, c.vals, c.refusals, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("draw %d (%v): %v", i, c.vals, err)
		}
		objs, err := decode(manifests)
		if err != nil {
			t.Fatalf("draw %d (%v): %v", i, c.vals, err)
		}
		var got []string
		for _, o := range objs {
			got = append(got, o.Kind+"/"+o.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.objects) {
			t.Fatalf("draw %d (%v): rendered %v, the model wants %v", i, c.vals, got, c.objects)
		}
		if err := checkCluster(objs); err != nil {
			t.Fatalf("draw %d (%v):\n%v", i, c.vals, err)
		}
		if err := checkModel(c, objs); err != nil {
			t.Fatalf("draw %d (%v): %v", i, c.vals, err)
		}
	}
}

func draw(rng *rand.Rand) choice {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	coin := func() bool { return rng.IntN(2) == 0 }
	durable, mode := pick("iceberg", "object", "postgres"), pick("", "every", "elected", "dedicated")
	kind, claim := pick("Deployment", "StatefulSet"), rng.IntN(4) == 0
	workload, compaction, recovery, reconcile := rng.IntN(5) > 0, coin(), coin(), rng.IntN(3) == 0
	recoveryContainers, checkers := rng.IntN(5) > 0, rng.IntN(5) > 0
	podMonitor, rule, netpol, token := coin(), coin(), coin(), coin()
	catalog, catalogSecret := rng.IntN(3) == 0, rng.IntN(3) == 0
	full := pick("", "", "cm", "an-uncommonly-long-release-prefix-of-forty-characters-and-more")

	c := choice{token: token}
	vals := map[string]any{
		"fullnameOverride": full,
		"config":           map[string]any{"durable": durable, "catalog": map[string]any{}},
		"fleet":            map[string]any{"mode": mode},
		"workload": map[string]any{"enabled": workload, "kind": kind, "replicas": rng.IntN(50),
			"state": map[string]any{"volumeClaim": map[string]any{"enabled": claim}}},
		"compaction": map[string]any{"enabled": compaction},
		"recovery":   map[string]any{"enabled": recovery},
		"reconcile":  map[string]any{"enabled": reconcile},
		"monitoring": map[string]any{"podMonitor": map[string]any{"enabled": podMonitor},
			"prometheusRule": map[string]any{"enabled": rule}},
		"networkPolicy": map[string]any{"enabled": netpol},
	}
	if catalog {
		vals["config"].(map[string]any)["catalog"] = map[string]any{"type": "rest", "uri": "http://iceberg:8181"}
	}
	if catalogSecret {
		vals["credentials"] = map[string]any{"catalogProps": map[string]any{"secretName": "catalog"}}
	}
	if token {
		vals["metrics"] = map[string]any{"tokenSecret": map[string]any{"secretName": "metrics-token"}}
	}
	if recoveryContainers {
		vals["recovery"].(map[string]any)["containers"] = []any{map[string]any{"name": "replayer", "image": "registry.example/replayer:1"}}
	}
	if checkers {
		vals["reconcile"].(map[string]any)["checkers"] = map[string]any{"lake": map[string]any{"kind": "iceberg", "table": "lake.orders"}}
	}
	c.vals = vals

	// The model: what the chart refuses, else what it renders.
	if mode == "" {
		mode = map[bool]string{true: "every", false: "elected"}[durable == "iceberg"]
	}
	c.fleet = map[bool]string{true: "never", false: mode}[mode == "dedicated"]
	covmirrorPods := workload || recovery || compaction || reconcile || mode == "dedicated"
	if mode != "every" && durable == "iceberg" {
		c.refusals = append(c.refusals, "needs config.durable object or postgres")
	}
	if workload && claim && kind == "Deployment" {
		c.refusals = append(c.refusals, "needs workload.kind StatefulSet")
	}
	if catalog && catalogSecret && covmirrorPods {
		c.refusals = append(c.refusals, "credentials.catalogProps and config.catalog are both set")
	}
	if recovery && !recoveryContainers {
		c.refusals = append(c.refusals, "recovery.enabled needs recovery.containers")
	}
	if reconcile && !checkers {
		c.refusals = append(c.refusals, "reconcile.enabled needs reconcile.checkers")
	}
	prefix := "covmirror"
	if full != "" {
		prefix = strings.TrimSuffix(full[:min(len(full), 40)], "-")
	}
	add := func(kind, suffix string) { c.objects = append(c.objects, kind+"/"+prefix+suffix) }
	add("ConfigMap", "-config")
	if workload {
		add(kind, "-ingest")
		if kind == "StatefulSet" {
			add("Service", "-ingest")
		}
	}
	if compaction {
		add("CronJob", "-compaction")
	}
	if reconcile {
		add("CronJob", "-reconcile")
	}
	if recovery {
		add("Deployment", "-recovery")
	}
	if mode == "dedicated" {
		add("Deployment", "-fleet")
	}
	if podMonitor && (workload || recovery || mode == "dedicated") {
		add("PodMonitor", "")
	}
	if rule {
		add("PrometheusRule", "")
	}
	if netpol {
		add("NetworkPolicy", "-metrics")
	}
	slices.Sort(c.objects)
	return c
}

// checkModel: the sidecars run the model's fleet role, the fleet pods
// --fleet elected, and the token goes wherever the model says.
func checkModel(c choice, objs []object) error {
	for _, pt := range podTemplates(objs) {
		for _, ctr := range slices.Concat(pt.template.Spec.InitContainers, pt.template.Spec.Containers) {
			if !slices.Contains(ctr.Args, "serve") {
				continue
			}
			want := c.fleet
			if strings.HasSuffix(pt.owner.Name, "-fleet") {
				want = "elected"
			}
			if !slices.Contains(ctr.Args, "--fleet="+want) {
				return fmt.Errorf("%s: serve %v, want --fleet=%s", pt.owner, ctr.Args, want)
			}
			if slices.Contains(ctr.Args, "--metrics-token-file=/run/covmirror-token/token") != c.token {
				return fmt.Errorf("%s: serve %v: a metrics token is %v in the values", pt.owner, ctr.Args, c.token)
			}
		}
		if _, ok := pt.owner.Obj.(*appsv1.Deployment); ok && strings.HasSuffix(pt.owner.Name, "-recovery") {
			if d := pt.owner.Obj.(*appsv1.Deployment); d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				return fmt.Errorf("%s: the recovery worker is one replica, replaced after the old one is gone", pt.owner)
			}
		}
	}
	for _, o := range find(objs, "PodMonitor") {
		ep := o.Obj.(*monitoringv1.PodMonitor).Spec.PodMetricsEndpoints[0]
		if (ep.Authorization != nil) != c.token {
			return fmt.Errorf("%s: authorization %v, a metrics token is %v in the values", o, ep.Authorization, c.token)
		}
	}
	for _, o := range find(objs, "StatefulSet") {
		claims := o.Obj.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates
		want := c.vals["workload"].(map[string]any)["state"].(map[string]any)["volumeClaim"].(map[string]any)["enabled"].(bool)
		if (len(claims) == 1) != want {
			return fmt.Errorf("%s: %d volume claim templates, a claim is %v in the values", o, len(claims), want)
		}
	}
	return nil
}
