package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/switchboard-mcp/switchboard/config"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// objects are the manifests of one directory, decoded.
type objects struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	configMaps  []*corev1.ConfigMap
	secrets     []*corev1.Secret
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
}

// load decodes every document of the YAML files of dirs, strictly: an
// unknown or misspelled field is an error that names the file.
func load(t *testing.T, dirs ...string) *objects {
	t.Helper()
	o := &objects{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no manifests in %s: %v", dir, err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for i, doc := range bytes.Split(data, []byte("\n---\n")) {
				if err := o.decode(doc); err != nil {
					t.Errorf("%s, document %d: %v", file, i+1, err)
				}
			}
		}
	}
	return o
}

// decodeInto decodes doc strictly (an unknown field is an error) into a new
// T, kept in list.
func decodeInto[T any](list *[]*T, doc []byte) error {
	v := new(T)
	*list = append(*list, v)
	return yaml.UnmarshalStrict(doc, v)
}

func (o *objects) decode(doc []byte) error {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	switch meta.APIVersion + " " + meta.Kind {
	case "apps/v1 Deployment":
		return decodeInto(&o.deployments, doc)
	case "v1 Service":
		return decodeInto(&o.services, doc)
	case "v1 ConfigMap":
		return decodeInto(&o.configMaps, doc)
	case "v1 Secret":
		return decodeInto(&o.secrets, doc)
	case "policy/v1 PodDisruptionBudget":
		return decodeInto(&o.pdbs, doc)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return decodeInto(&o.hpas, doc)
	}
	return fmt.Errorf("unexpected %s %s", meta.APIVersion, meta.Kind)
}

// TestManifests: both deployments decode strictly and hang together.
func TestManifests(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dirs      []string
		stateless bool
	}{{"stateful", []string{"."}, false}, {"stateless", []string{".", "stateless"}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			o := load(t, tc.dirs...)
			wantMaps := 1
			if tc.stateless {
				wantMaps = 2 // and the rate limits' config
			}
			if len(o.configMaps) != wantMaps || len(o.secrets) != 1 {
				t.Fatalf("want %d ConfigMaps and one Secret, got %d and %d", wantMaps, len(o.configMaps), len(o.secrets))
			}
			cm, secret := o.configMaps[0], o.secrets[0]
			cfg, err := config.Parse("configmap mcp.json", []byte(cm.Data["mcp.json"]))
			if err != nil || len(cfg.Rejected) > 0 || len(cfg.Servers) == 0 {
				t.Errorf("the ConfigMap's mcp.json does not load: %v %v", err, cfg.Rejected)
			}
			var deploys []*appsv1.Deployment
			for _, d := range o.deployments {
				if slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--stateless") == tc.stateless && d.Name != "switchboard-redis" {
					deploys = append(deploys, d)
				}
			}
			if len(deploys) != 1 {
				t.Fatalf("want one deployment, got %d", len(deploys))
			}
			checkDeployment(t, deploys[0], cm, secret, tc.stateless)
			if tc.stateless {
				checkLimits(t, o, deploys[0], cm, secret)
			}
			pods := labels.Set(deploys[0].Spec.Template.Labels)
			matches := func(what string, sel map[string]string) {
				t.Helper()
				if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(pods) {
					t.Errorf("%s selects %v, not the deployment's pods %v", what, sel, pods)
				}
			}
			found := map[string]bool{}
			for _, s := range o.services {
				if labels.SelectorFromSet(s.Spec.Selector).Matches(pods) {
					found["service"] = true
					if s.Spec.Ports[0].TargetPort.StrVal != "http" {
						t.Errorf("service %s targets %v, want the http port", s.Name, s.Spec.Ports[0].TargetPort)
					}
				}
			}
			for _, p := range o.pdbs {
				if labels.SelectorFromSet(p.Spec.Selector.MatchLabels).Matches(pods) {
					found["pdb"] = true
					matches("PodDisruptionBudget "+p.Name, p.Spec.Selector.MatchLabels)
				}
			}
			for _, h := range o.hpas {
				if h.Spec.ScaleTargetRef.Name == deploys[0].Name && h.Spec.ScaleTargetRef.Kind == "Deployment" {
					found["hpa"] = true
					if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
						t.Errorf("HPA %s scales %v to %d", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
					}
				}
			}
			want := []string{"pdb", "service"}
			if tc.stateless {
				want = append(want, "hpa")
			} else if found["hpa"] {
				t.Error("the stateful gateway must not be scaled: its sessions live in one process")
			}
			for _, w := range want {
				if !found[w] {
					t.Errorf("no %s for the deployment", w)
				}
			}
		})
	}
}

// checkDeployment checks what the gateway needs of its pod.
func checkDeployment(t *testing.T, d *appsv1.Deployment, cm *corev1.ConfigMap, secret *corev1.Secret, stateless bool) {
	t.Helper()
	if !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: its selector does not select its pods", d.Name)
	}
	if !stateless && (d.Spec.Replicas == nil || *d.Spec.Replicas != 1) {
		t.Errorf("%s: a stateful gateway runs one replica", d.Name)
	}
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: not runAsNonRoot", d.Name)
	}
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"serve", "--listen 0.0.0.0:7777", "--auth-token-env SWITCHBOARD_TOKEN", "--config /etc/switchboard/mcp.json"} {
		if !strings.Contains(args, want) {
			t.Errorf("%s: args %q lack %q", d.Name, args, want)
		}
	}
	if _, ok := secret.StringData["SWITCHBOARD_TOKEN"]; !ok || len(c.EnvFrom) == 0 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != secret.Name {
		t.Errorf("%s: the token does not come from Secret %s", d.Name, secret.Name)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("%s: liveness must be /healthz, which never depends on servers", d.Name)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: readiness must be /readyz", d.Name)
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: the container may escalate or write its root filesystem", d.Name)
	}
	mounted := false
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
			for _, m := range c.VolumeMounts {
				mounted = mounted || m.Name == v.Name && m.MountPath == "/etc/switchboard"
			}
		}
	}
	if !mounted {
		t.Errorf("%s: ConfigMap %s is not mounted at /etc/switchboard", d.Name, cm.Name)
	}
}

// checkLimits checks the stateless gateway's rate limits: a second config
// file, mounted and named after the first, whose limits are in the Redis
// of a Service that selects a Redis pod, with its password from the
// Secret, never in the file.
func checkLimits(t *testing.T, o *objects, d *appsv1.Deployment, cm *corev1.ConfigMap, secret *corev1.Secret) {
	t.Helper()
	limitsCM := o.configMaps[1]
	c := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--config /etc/switchboard/mcp.json --config /etc/switchboard-stateless/limits.json") {
		t.Errorf("%s: args %q do not read the limits after the config", d.Name, args)
	}
	mounted := false
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == limitsCM.Name {
			for _, m := range c.VolumeMounts {
				mounted = mounted || m.Name == v.Name && m.MountPath == "/etc/switchboard-stateless"
			}
		}
	}
	if !mounted {
		t.Errorf("%s: ConfigMap %s is not mounted at /etc/switchboard-stateless", d.Name, limitsCM.Name)
	}
	dir := t.TempDir()
	base, limits := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "limits.json")
	if err := os.WriteFile(base, []byte(cm.Data["mcp.json"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(limits, []byte(limitsCM.Data["limits.json"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(&config.LoadOptions{Paths: []string{base, limits}})
	if err != nil || len(cfg.Warnings) > 0 {
		t.Fatalf("the two config files do not load: %v %v", err, cfg.Warnings)
	}
	l := cfg.Gateway.Limits
	if len(cfg.Servers) == 0 || l == nil || l.PerIdentity == nil || l.Redis == nil {
		t.Fatalf("the loaded config has %d servers and limits %+v; want the servers and limits in Redis", len(cfg.Servers), l)
	}
	if _, ok := secret.StringData[l.Redis.PasswordEnv]; !ok || l.Redis.PasswordEnv == "" {
		t.Errorf("Redis's password %q is not in Secret %s", l.Redis.PasswordEnv, secret.Name)
	}
	var redisPods labels.Set
	for _, rd := range o.deployments {
		if rd.Name == "switchboard-redis" {
			redisPods = rd.Spec.Template.Labels
			args := strings.Join(rd.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(args, "--requirepass $("+l.Redis.PasswordEnv+")") {
				t.Errorf("Redis's args %q do not require the password", args)
			}
		}
	}
	found := false
	for _, s := range o.services {
		if strings.HasPrefix(l.Redis.URL, fmt.Sprintf("redis://%s:%d/", s.Name, s.Spec.Ports[0].Port)) {
			found = redisPods != nil && labels.SelectorFromSet(s.Spec.Selector).Matches(redisPods)
		}
	}
	if !found {
		t.Errorf("no Service at %s selects a Redis pod", l.Redis.URL)
	}
}
