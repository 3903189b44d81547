package charttest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// lintMessages runs what `helm lint` runs on the chart with values over its
// defaults and returns its error messages.
func lintMessages(values map[string]any) []string {
	var errs []string
	for _, m := range lint.All(chartDir, values, namespace, false).Messages {
		if m.Severity >= support.ErrorSev {
			errs = append(errs, m.Error())
		}
	}
	return errs
}

// TestHelmLintSchema: helm lint passes the chart's defaults and the
// production values, and values.schema.json makes it refuse a wrong value,
// naming it; a render with the wrong value is refused too.
func TestHelmLintSchema(t *testing.T) {
	if errs := lintMessages(nil); len(errs) > 0 {
		t.Fatalf("helm lint of the defaults: %v", errs)
	}
	for _, tt := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"replicas as a word", map[string]any{"gateway": map[string]any{"replicas": "two"}}, "/gateway/replicas"},
		{"a negative maxUnavailable", map[string]any{"orchestrator": map[string]any{"pdb": map[string]any{"maxUnavailable": -1}}}, "/orchestrator/pdb/maxUnavailable"},
		{"the latest tag", map[string]any{"image": map[string]any{"tag": "latest"}}, "/image/tag"},
		{"a misspelt key", map[string]any{"gateway": map[string]any{"replica": 3}}, "replica"},
		{"a Redis password a URL cannot carry", map[string]any{"secrets": map[string]any{"redisPassword": "a@b/c"}}, "/secrets/redisPassword"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := lintMessages(tt.values)
			if len(errs) == 0 {
				t.Fatalf("helm lint accepted %v", tt.values)
			}
			if joined := strings.Join(errs, "\n"); !strings.Contains(joined, "schema") || !strings.Contains(joined, tt.want) {
				t.Errorf("helm lint errors do not name the schema and %s:\n%s", tt.want, joined)
			}
			if _, err := render(t, nil, tt.values); err == nil {
				t.Errorf("a render with %v succeeded", tt.values)
			}
		})
	}
}

// TestChartPDB: each Deployment's PodDisruptionBudget allows one pod down
// by default (a one-replica install can still drain its node), takes
// minAvailable when it is set, and is left out when disabled.
func TestChartPDB(t *testing.T) {
	pdbs := func(t *testing.T, files []string, overrides map[string]any) map[string]*policyv1.PodDisruptionBudget {
		t.Helper()
		r, err := render(t, files, overrides)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*policyv1.PodDisruptionBudget{}
		for _, p := range objectsOf[*policyv1.PodDisruptionBudget](r.objects) {
			out[strings.TrimPrefix(p.Name, "nexus-")] = p
		}
		return out
	}
	def := pdbs(t, nil, map[string]any{"gateway": map[string]any{"replicas": 1}})
	if len(def) != 4 {
		t.Fatalf("%d PDBs by default, want one per Deployment (4)", len(def))
	}
	for name, p := range def {
		if p.Spec.MinAvailable != nil || p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("%s: minAvailable %v maxUnavailable %v, want maxUnavailable 1 alone", name, p.Spec.MinAvailable, p.Spec.MaxUnavailable)
		}
	}
	prod := pdbs(t, []string{"values-production.yaml"}, nil)
	if p := prod["gateway"]; p == nil || p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() != 2 || p.Spec.MaxUnavailable != nil {
		t.Errorf("production gateway PDB %+v, want minAvailable 2 alone", p)
	}
	off := pdbs(t, nil, map[string]any{"capability": map[string]any{"pdb": map[string]any{"enabled": false}}})
	if _, ok := off["capability"]; ok || len(off) != 3 {
		t.Errorf("capability.pdb.enabled false: PDBs %v, want the other three", slices.Collect(maps.Keys(off)))
	}
}

// secretOf is the chart's Secret in r, or nil.
func secretOf(r *rendered) *corev1.Secret {
	for _, s := range objectsOf[*corev1.Secret](r.objects) {
		return s
	}
	return nil
}

// secretRefs lists every secret name the pods' env entries read.
func secretRefs(r *rendered) map[string]bool {
	names := map[string]bool{}
	var pods []corev1.PodTemplateSpec
	for _, d := range objectsOf[*appsv1.Deployment](r.objects) {
		pods = append(pods, d.Spec.Template)
	}
	for _, s := range objectsOf[*appsv1.StatefulSet](r.objects) {
		pods = append(pods, s.Spec.Template)
	}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					names[e.ValueFrom.SecretKeyRef.Name] = true
				}
			}
		}
	}
	return names
}

// TestChartSecrets: a given Secret is used and none is made; with a seed the
// generated keys are the same on every render (a GitOps tool that renders
// with helm template syncs no change, and the pods' checksum stays), distinct
// per key; given values win; the in-cluster Redis requires its password and
// both its clients carry it.
func TestChartSecrets(t *testing.T) {
	t.Run("existingSecret", func(t *testing.T) {
		r, err := render(t, nil, map[string]any{"secrets": map[string]any{"existingSecret": "mine"}})
		if err != nil {
			t.Fatal(err)
		}
		if s := secretOf(r); s != nil {
			t.Errorf("the chart made Secret %s beside the existing one", s.Name)
		}
		if refs := secretRefs(r); len(refs) != 1 || !refs["mine"] {
			t.Errorf("pods read secrets %v, want only mine", refs)
		}
	})
	t.Run("seed renders the same keys every time", func(t *testing.T) {
		vals := map[string]any{"secrets": map[string]any{"seed": "a-long-random-seed-kept-like-a-password", "internalKey": ""}}
		a, err := render(t, nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		b, err := render(t, nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		sa, sb := secretOf(a), secretOf(b)
		seen := map[string]string{}
		for _, k := range []string{"internal-key", "postgres-password", "redis-password"} {
			if sa.StringData[k] == "" || sa.StringData[k] != sb.StringData[k] {
				t.Errorf("%s: %q then %q, want one non-empty value", k, sa.StringData[k], sb.StringData[k])
			}
			if other, dup := seen[sa.StringData[k]]; dup {
				t.Errorf("%s and %s are the same value", k, other)
			}
			seen[sa.StringData[k]] = k
		}
		other, err := render(t, nil, map[string]any{"secrets": map[string]any{"seed": "another-seed"}})
		if err != nil {
			t.Fatal(err)
		}
		if secretOf(other).StringData["internal-key"] == sa.StringData["internal-key"] {
			t.Error("two seeds derive the same internal key")
		}
		checksum := func(r *rendered) string {
			return objectsOf[*appsv1.Deployment](r.objects)[0].Spec.Template.Annotations["checksum/secret"]
		}
		if checksum(a) != checksum(b) {
			t.Error("the pods' secret checksum changes between renders: every sync would roll them")
		}
	})
	t.Run("given values win", func(t *testing.T) {
		r, err := render(t, nil, map[string]any{"secrets": map[string]any{"seed": "s", "redisPassword": "given-pass", "internalKey": "k"}})
		if err != nil {
			t.Fatal(err)
		}
		if s := secretOf(r); s.StringData["redis-password"] != "given-pass" || s.StringData["internal-key"] != "k" {
			t.Errorf("secret %v, want the given redis-password and internal-key", s.StringData)
		}
	})
	t.Run("Redis requires its password", func(t *testing.T) {
		r, err := render(t, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range objectsOf[*appsv1.StatefulSet](r.objects) {
			if !strings.HasSuffix(s.Name, "-redis") {
				continue
			}
			c := s.Spec.Template.Spec.Containers[0]
			if !strings.Contains(strings.Join(c.Args, " "), "--requirepass $(REDIS_PASSWORD)") || envFromSecret(c, "REDIS_PASSWORD") != "redis-password" || envFromSecret(c, "REDISCLI_AUTH") != "redis-password" {
				t.Errorf("redis args %v env %v: want --requirepass from the secret's redis-password, and the probes' REDISCLI_AUTH", c.Args, c.Env)
			}
		}
		clients := 0
		for _, d := range objectsOf[*appsv1.Deployment](r.objects) {
			c := d.Spec.Template.Spec.Containers[0]
			if u := envValue(c, "NEXUS_REDIS_URL"); u != "" {
				clients++
				if !strings.HasPrefix(u, "redis://:$(REDIS_PASSWORD)@") || envFromSecret(c, "REDIS_PASSWORD") != "redis-password" {
					t.Errorf("%s: NEXUS_REDIS_URL %q without the password", d.Name, u)
				}
			}
		}
		if clients != 2 {
			t.Errorf("%d Deployments reach Redis, want the gateway and the orchestrator", clients)
		}
	})
}

// envFromSecret is the secret key the container's env entry name reads, or "".
func envFromSecret(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}

// TestChartExtensionPoints: extra env, envFrom, volumes and their mounts,
// pod annotations (global and per component) and the stores' storage class
// reach the objects.
func TestChartExtensionPoints(t *testing.T) {
	r, err := render(t, nil, map[string]any{
		"extraEnv":          []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}},
		"envFrom":           []any{map[string]any{"configMapRef": map[string]any{"name": "site"}}},
		"extraVolumes":      []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "site-ca"}}},
		"extraVolumeMounts": []any{map[string]any{"name": "ca", "mountPath": "/etc/ssl/site"}},
		"podAnnotations":    map[string]any{"team": "design"},
		"gateway":           map[string]any{"podAnnotations": map[string]any{"sidecar": "off"}},
		"redis":             map[string]any{"storageClass": "fast"},
		"postgresql":        map[string]any{"storageClass": "durable"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range objectsOf[*appsv1.Deployment](r.objects) {
		p := d.Spec.Template
		c := p.Spec.Containers[0]
		if envValue(c, "HTTPS_PROXY") != "http://proxy:3128" || len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != "site" {
			t.Errorf("%s: extraEnv/envFrom missing: %v %v", d.Name, c.Env, c.EnvFrom)
		}
		if len(p.Spec.Volumes) != 2 || len(c.VolumeMounts) != 2 || c.VolumeMounts[1].MountPath != "/etc/ssl/site" {
			t.Errorf("%s: volumes %v mounts %v", d.Name, p.Spec.Volumes, c.VolumeMounts)
		}
		if p.Annotations["team"] != "design" || (strings.HasSuffix(d.Name, "-gateway") != (p.Annotations["sidecar"] == "off")) {
			t.Errorf("%s: annotations %v", d.Name, p.Annotations)
		}
	}
	for _, s := range objectsOf[*appsv1.StatefulSet](r.objects) {
		want := map[bool]string{true: "fast", false: "durable"}[strings.HasSuffix(s.Name, "-redis")]
		if sc := s.Spec.VolumeClaimTemplates[0].Spec.StorageClassName; sc == nil || *sc != want {
			t.Errorf("%s: storage class %v, want %s", s.Name, sc, want)
		}
	}
}

// TestChartReadmeListsEveryValue: deploy/nexus/README.md's reference has a
// row for every value of values.yaml (a map listed whole covers its keys)
// and no row for a value that is not there.
func TestChartReadmeListsEveryValue(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = true
	}
	vals, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	var walk func(prefix string, v map[string]any)
	walk = func(prefix string, v map[string]any) {
		for k, x := range v {
			path := strings.TrimPrefix(prefix+"."+k, ".")
			known[path] = true
			if rows[path] {
				continue
			}
			if m, ok := x.(map[string]any); ok && len(m) > 0 {
				walk(path, m)
				continue
			}
			t.Errorf("values.yaml has %s; README.md lists no row for it", path)
		}
	}
	walk("", vals.AsMap())
	for r := range rows {
		if !known[r] {
			t.Errorf("README.md lists %s, which values.yaml does not have", r)
		}
	}
}
