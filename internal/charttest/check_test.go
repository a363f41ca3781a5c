package charttest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/robfig/cron/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// image is the repository of covmirror's own containers.
const image = "covmirror/covmirror:"

// credentialEnv are the variables that carry credentials: only ever from
// a Secret.
var credentialEnv = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "COVMIRROR_POSTGRES_URL", "PGPASSWORD", "COVMIRROR_CATALOG_PROPS"}

// podTemplate is a rendered pod template and the selector that must match
// it.
type podTemplate struct {
	owner    object
	selector *metav1.LabelSelector // nil for a CronJob's
	template corev1.PodTemplateSpec
	claims   []string // a StatefulSet's volumeClaimTemplates
	job      bool
}

func podTemplates(objs []object) []podTemplate {
	var pts []podTemplate
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			pts = append(pts, podTemplate{owner: o, selector: v.Spec.Selector, template: v.Spec.Template})
		case *appsv1.StatefulSet:
			var claims []string
			for _, c := range v.Spec.VolumeClaimTemplates {
				claims = append(claims, c.Name)
			}
			pts = append(pts, podTemplate{owner: o, selector: v.Spec.Selector, template: v.Spec.Template, claims: claims})
		case *batchv1.CronJob:
			pts = append(pts, podTemplate{owner: o, template: v.Spec.JobTemplate.Spec.Template, job: true})
		}
	}
	return pts
}

// checkCluster applies the checks an API server (and the controllers
// behind it) would to the rendered objects, and the chart's own rules.
func checkCluster(objs []object) error {
	var errs []error
	fail := func(o object, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...)))
	}
	seen := map[string]bool{}
	configMaps := map[string]bool{}
	for _, o := range objs {
		meta := metaOf(o.Obj)
		if seen[o.Kind+"/"+meta.GetName()] {
			fail(o, "rendered twice")
		}
		seen[o.Kind+"/"+meta.GetName()] = true
		if meta.GetNamespace() != "" {
			fail(o, "sets namespace %q: the release's namespace is Helm's to give", meta.GetNamespace())
		}
		for _, msg := range validation.IsDNS1123Subdomain(meta.GetName()) {
			fail(o, "name %q: %s", meta.GetName(), msg)
		}
		errs = append(errs, checkLabels(o, "labels", meta.GetLabels())...)
		for k := range meta.GetAnnotations() {
			for _, msg := range validation.IsQualifiedName(k) {
				fail(o, "annotation key %q: %s", k, msg)
			}
		}
		if cm, ok := o.Obj.(*corev1.ConfigMap); ok {
			configMaps[cm.Name] = true
			for k, v := range cm.Data {
				for _, msg := range validation.IsConfigMapKey(k) {
					fail(o, "key %q: %s", k, msg)
				}
				for _, line := range strings.Split(v, "\n") {
					key, _, _ := strings.Cut(line, "=")
					if credentialKey(strings.TrimSpace(key)) {
						fail(o, "holds %q: credentials come from Secrets only", strings.TrimSpace(key))
					}
				}
			}
		}
	}
	pts := podTemplates(objs)
	for _, pt := range pts {
		errs = append(errs, checkPodTemplate(pt, configMaps)...)
	}
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *corev1.Service:
			errs = append(errs, checkService(o, v, objs)...)
		case *appsv1.StatefulSet:
			if !seen["Service/"+v.Spec.ServiceName] {
				fail(o, "serviceName %q names no rendered Service", v.Spec.ServiceName)
			}
		case *batchv1.CronJob:
			if len(v.Name) > 52 {
				fail(o, "a CronJob's name is at most 52 characters (its Jobs' names add 11)")
			}
			if _, err := cron.ParseStandard(v.Spec.Schedule); err != nil {
				fail(o, "schedule %q: %v", v.Spec.Schedule, err)
			}
		case *networkingv1.NetworkPolicy:
			errs = append(errs, checkNetworkPolicy(o, v, pts)...)
		case *monitoringv1.PodMonitor:
			errs = append(errs, checkPodMonitor(o, v, pts)...)
		case *monitoringv1.PrometheusRule:
			errs = append(errs, checkRules(o, v)...)
		}
	}
	return errors.Join(errs...)
}

func metaOf(obj any) metav1.Object {
	if m, ok := obj.(metav1.Object); ok {
		return m
	}
	panic(fmt.Sprintf("%T has no object metadata", obj))
}

// credentialKey: a configuration-file key naming a credential.
func credentialKey(key string) bool {
	if key == "object.url" || strings.HasPrefix(key, "#") {
		return false
	}
	for _, word := range []string{"password", "secret", "token", "credential", "postgres.url", "access-key"} {
		if strings.Contains(strings.ToLower(key), word) {
			return true
		}
	}
	return strings.HasSuffix(key, ".dsn")
}

func checkLabels(o object, what string, l map[string]string) []error {
	var errs []error
	for k, v := range l {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("%s: %s key %q: %s", o, what, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("%s: %s %q value %q: %s", o, what, k, v, msg))
		}
	}
	return errs
}

func checkSelector(o object, sel *metav1.LabelSelector, l map[string]string) error {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Errorf("%s: selector: %w", o, err)
	}
	if s.Empty() {
		return fmt.Errorf("%s: an empty selector selects every pod", o)
	}
	if !s.Matches(labels.Set(l)) {
		return fmt.Errorf("%s: selector %v does not match the pod template's labels %v", o, s, l)
	}
	return nil
}

func checkService(o object, svc *corev1.Service, objs []object) []error {
	for _, pt := range podTemplates(objs) {
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pt.template.Labels)) && len(svc.Spec.Selector) > 0 {
			return nil
		}
	}
	return []error{fmt.Errorf("%s: selector %v matches no rendered pod template", o, svc.Spec.Selector)}
}

func checkNetworkPolicy(o object, np *networkingv1.NetworkPolicy, pts []podTemplate) []error {
	var errs []error
	s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		return []error{fmt.Errorf("%s: podSelector: %w", o, err)}
	}
	for _, pt := range pts {
		if has(pt, "metrics") && !s.Matches(labels.Set(pt.template.Labels)) {
			errs = append(errs, fmt.Errorf("%s: does not select %s, whose metrics port it is for", o, pt.owner))
		}
	}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.Type == intstr.Int {
				for _, msg := range validation.IsValidPortNum(int(p.Port.IntVal)) {
					errs = append(errs, fmt.Errorf("%s: port %d: %s", o, p.Port.IntVal, msg))
				}
			}
		}
	}
	return errs
}

// has: a container of the pod template has a port named name.
func has(pt podTemplate, name string) bool {
	for _, c := range slices.Concat(pt.template.Spec.InitContainers, pt.template.Spec.Containers) {
		if slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name }) {
			return true
		}
	}
	return false
}

func checkPodMonitor(o object, pm *monitoringv1.PodMonitor, pts []podTemplate) []error {
	var errs []error
	s, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil || s.Empty() {
		return []error{fmt.Errorf("%s: selector %v: %v (an empty one scrapes every pod)", o, s, err)}
	}
	if len(pm.Spec.PodMetricsEndpoints) == 0 {
		errs = append(errs, fmt.Errorf("%s: no endpoints", o))
	}
	for _, ep := range pm.Spec.PodMetricsEndpoints {
		if ep.Port == nil {
			errs = append(errs, fmt.Errorf("%s: an endpoint without a port name", o))
			continue
		}
		targets := 0
		for _, pt := range pts {
			if s.Matches(labels.Set(pt.template.Labels)) && has(pt, *ep.Port) {
				targets++
			}
		}
		if targets == 0 {
			errs = append(errs, fmt.Errorf("%s: port %q is on no pod it selects", o, *ep.Port))
		}
	}
	return errs
}

func checkRules(o object, pr *monitoringv1.PrometheusRule) []error {
	var errs []error
	if len(pr.Spec.Groups) == 0 {
		errs = append(errs, fmt.Errorf("%s: no rule groups", o))
	}
	for _, g := range pr.Spec.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			errs = append(errs, fmt.Errorf("%s: group %q is unnamed or empty", o, g.Name))
		}
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr.String() == "" {
				errs = append(errs, fmt.Errorf("%s: a rule of group %q without alert or expr", o, g.Name))
			}
		}
	}
	return errs
}
