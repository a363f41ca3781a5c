package charttest

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// checkPodTemplate checks one pod template as the API server's
// validation would, and the chart's rules for covmirror's containers.
func checkPodTemplate(pt podTemplate, configMaps map[string]bool) []error {
	var errs []error
	o, spec := pt.owner, pt.template.Spec
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...)))
	}
	errs = append(errs, checkLabels(o, "pod template labels", pt.template.Labels)...)
	if pt.selector != nil {
		if err := checkSelector(o, pt.selector, pt.template.Labels); err != nil {
			errs = append(errs, err)
		}
	}
	if pt.job && spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		fail("a Job's pods restart Never or OnFailure, not %q", spec.RestartPolicy)
	}
	volumes := slices.Clone(pt.claims)
	for _, v := range spec.Volumes {
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			fail("volume %q: %s", v.Name, msg)
		}
		if slices.Contains(volumes, v.Name) {
			fail("volume %q given twice", v.Name)
		}
		volumes = append(volumes, v.Name)
		if v.ConfigMap != nil && !configMaps[v.ConfigMap.Name] {
			fail("volume %q: ConfigMap %q is not rendered", v.Name, v.ConfigMap.Name)
		}
		if v.Secret != nil && v.Secret.SecretName == "" {
			fail("volume %q names no Secret", v.Name)
		}
	}
	if len(spec.Containers) == 0 {
		fail("no containers")
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		fail("the pod does not require a non-root user")
	}
	names, ports := map[string]bool{}, map[string]bool{}
	for i, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		init := i < len(spec.InitContainers)
		errs = append(errs, checkContainer(o, c, init, pt.job, volumes, names, ports)...)
	}
	return errs
}

func checkContainer(o object, c corev1.Container, init, job bool, volumes []string, names, ports map[string]bool) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: container %q: %s", o, c.Name, fmt.Sprintf(format, args...)))
	}
	for _, msg := range validation.IsDNS1123Label(c.Name) {
		fail("name: %s", msg)
	}
	if names[c.Name] {
		fail("two containers of the pod have this name")
	}
	names[c.Name] = true
	if c.Image == "" {
		fail("no image")
	}
	if c.RestartPolicy != nil && (!init || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
		fail("restartPolicy %q: only an init container's, and only Always (a native sidecar)", *c.RestartPolicy)
	}
	portNames := map[string]bool{}
	for _, p := range c.Ports {
		for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
			fail("port %d: %s", p.ContainerPort, msg)
		}
		if p.Name == "" {
			fail("port %d has no name", p.ContainerPort)
		}
		for _, msg := range validation.IsValidPortName(p.Name) {
			fail("port name %q: %s", p.Name, msg)
		}
		if ports[p.Name] {
			fail("port name %q is used twice in the pod", p.Name)
		}
		ports[p.Name], portNames[p.Name] = true, true
	}
	for _, m := range c.VolumeMounts {
		if !slices.Contains(volumes, m.Name) {
			fail("mounts volume %q, which the pod does not have", m.Name)
		}
		if !path.IsAbs(m.MountPath) {
			fail("mount path %q is not absolute", m.MountPath)
		}
	}
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			fail("variable %q: %s", e.Name, msg)
		}
		if ref := secretRef(e); ref != nil {
			for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
				fail("variable %q: Secret name %q: %s", e.Name, ref.Name, msg)
			}
			for _, msg := range validation.IsConfigMapKey(ref.Key) {
				fail("variable %q: Secret key %q: %s", e.Name, ref.Key, msg)
			}
		} else if slices.Contains(credentialEnv, e.Name) {
			fail("variable %q holds a credential and does not come from a Secret", e.Name)
		}
	}
	for what, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil {
			continue
		}
		if p.HTTPGet == nil {
			fail("the %s probe is not httpGet (the image has no shell)", what)
			continue
		}
		if port := p.HTTPGet.Port; port.Type == intstr.String && !portNames[port.StrVal] {
			fail("the %s probe's port %q is none of the container's", what, port.StrVal)
		}
	}
	if req, lim := c.Resources.Requests, c.Resources.Limits; req != nil && lim != nil {
		for name, q := range req {
			if l, ok := lim[name]; ok && q.Cmp(l) > 0 {
				fail("requests %s %v above its limit %v", name, q.String(), l.String())
			}
		}
	}
	if strings.HasPrefix(c.Image, image) {
		errs = append(errs, checkCovmirror(o, c, init, job)...)
	}
	return errs
}

func secretRef(e corev1.EnvVar) *corev1.SecretKeySelector {
	if e.ValueFrom == nil {
		return nil
	}
	return e.ValueFrom.SecretKeyRef
}

// checkCovmirror: the chart's rules for covmirror's own containers.
func checkCovmirror(o object, c corev1.Container, init, job bool) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: covmirror container %q: %s", o, c.Name, fmt.Sprintf(format, args...)))
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		fail("wants runAsNonRoot, readOnlyRootFilesystem and no privilege escalation")
	}
	if c.Lifecycle != nil {
		fail("has a lifecycle hook: the image has no shell or curl to run one")
	}
	serve := slices.Contains(c.Args, "serve")
	if serve && !job {
		if c.StartupProbe == nil || c.LivenessProbe == nil {
			fail("serve without startup and liveness probes")
		}
		if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" }) {
			fail("serve without a port named metrics")
		}
	}
	socket := slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--socket=") })
	if socket && (!init || c.RestartPolicy == nil) {
		fail("the sidecar serving the pipeline's socket is not a native sidecar (an init container with restartPolicy Always)")
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--addr") || strings.HasPrefix(a, "--token-file") {
			fail("arg %q: the record API stays on the socket and loopback", a)
		}
		if strings.Contains(a, "://") && strings.Contains(a, "@") {
			fail("an argument holds a URL with user information")
		}
	}
	return errs
}
