package charttest

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// grpcServices are the chart's components that serve gRPC.
func grpcServices() []string { return []string{"orchestrator", "model-router", "capability"} }

// workload is a pod template with the name of what runs it.
type workload struct {
	kind, name, component string
	replicas              *int32
	template              corev1.PodTemplateSpec
}

func workloads(objs []runtime.Object) []workload {
	var out []workload
	for _, o := range objs {
		switch x := o.(type) {
		case *appsv1.Deployment:
			out = append(out, workload{"Deployment", x.Name, x.Spec.Template.Labels["app.kubernetes.io/component"], x.Spec.Replicas, x.Spec.Template})
		case *appsv1.StatefulSet:
			out = append(out, workload{"StatefulSet", x.Name, x.Spec.Template.Labels["app.kubernetes.io/component"], x.Spec.Replicas, x.Spec.Template})
		}
	}
	return out
}

func objectsOf[T runtime.Object](objs []runtime.Object) []T {
	var out []T
	for _, o := range objs {
		if x, ok := o.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestChart renders the chart for the default values and for the production
// values file and checks every object a cluster would get.
func TestChart(t *testing.T) {
	cases := []struct {
		name   string
		files  []string
		stores map[string]bool // in-cluster Redis and PostgreSQL
		// edges are the pod-to-pod calls the NetworkPolicies must allow,
		// external the calls to addresses outside the cluster.
		edges, external []string
		hpa             []string
		monitoring      bool
		// spans says whether the services export spans to a collector.
		spans bool
	}{
		{
			name: "default values", stores: map[string]bool{"redis": true, "postgresql": true},
			edges: []string{
				"capability -> postgresql:5432",
				"gateway -> orchestrator:7101",
				"gateway -> redis:6379",
				"orchestrator -> capability:7103",
				"orchestrator -> model-router:7102",
				"orchestrator -> postgresql:5432",
				"orchestrator -> redis:6379",
			},
			external: []string{"model-router -> 0.0.0.0/0 except [10.0.0.0/8 172.16.0.0/12 192.168.0.0/16]:443"},
		},
		{
			name: "production values", files: []string{"values-production.yaml"}, stores: map[string]bool{},
			edges: []string{
				"gateway -> orchestrator:7101",
				"orchestrator -> capability:7103",
				"orchestrator -> model-router:7102",
			},
			external: []string{
				"capability -> 10.20.1.0/24:5432",
				"gateway -> 10.20.0.0/24:6379",
				"model-router -> 0.0.0.0/0 except [10.0.0.0/8 172.16.0.0/12 192.168.0.0/16]:443",
				"orchestrator -> 10.20.0.0/24:6379",
				"orchestrator -> 10.20.1.0/24:5432",
			},
			hpa:        []string{"gateway", "model-router", "orchestrator"},
			monitoring: true,
			spans:      true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := render(t, tc.files, nil)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			ws := workloads(r.objects)
			var components []string
			for _, w := range ws {
				components = append(components, w.component)
			}
			slices.Sort(components)
			want := []string{"capability", "gateway", "model-router", "orchestrator"}
			for s, in := range tc.stores {
				if in {
					want = append(want, s)
				}
			}
			slices.Sort(want)
			if !slices.Equal(components, want) {
				t.Fatalf("workloads %v, want %v", components, want)
			}

			t.Run("labels", func(t *testing.T) { checkLabels(t, r) })
			t.Run("containers", func(t *testing.T) { checkContainers(t, r, ws) })
			t.Run("disruption budgets", func(t *testing.T) { checkPDBs(t, r, ws) })
			t.Run("capability runs two replicas", func(t *testing.T) {
				for _, w := range ws {
					if w.component == "capability" && (w.replicas == nil || *w.replicas != 2) {
						t.Errorf("capability replicas %v, want 2", w.replicas)
					}
				}
			})
			t.Run("stores are wired", func(t *testing.T) { checkStores(t, r, ws, tc.stores) })
			t.Run("gRPC services are headless", func(t *testing.T) {
				for _, s := range objectsOf[*corev1.Service](r.objects) {
					c := s.Labels["app.kubernetes.io/component"]
					if slices.Contains(grpcServices(), c) && s.Spec.ClusterIP != corev1.ClusterIPNone {
						t.Errorf("service %s has cluster IP %q; gRPC clients need every pod (headless)", s.Name, s.Spec.ClusterIP)
					}
				}
			})
			t.Run("network policies", func(t *testing.T) {
				got := policyEdges(t, r, ws)
				if !slices.Equal(got.pods, tc.edges) {
					t.Errorf("pod-to-pod calls allowed:\n  %s\nwant exactly:\n  %s", strings.Join(got.pods, "\n  "), strings.Join(tc.edges, "\n  "))
				}
				if !slices.Equal(got.external, tc.external) {
					t.Errorf("external calls allowed:\n  %s\nwant exactly:\n  %s", strings.Join(got.external, "\n  "), strings.Join(tc.external, "\n  "))
				}
				for _, w := range ws {
					if !slices.Contains(got.dns, w.component) && (w.component != "redis" && w.component != "postgresql") {
						t.Errorf("%s may not resolve names (no DNS egress)", w.component)
					}
				}
				pols := objectsOf[*networkingv1.NetworkPolicy](r.objects)
				for _, w := range ws {
					if w.kind != "Deployment" {
						continue
					}
					collector := egressOK(t, pols, w.template.Labels, map[string]string{"app.kubernetes.io/name": "opentelemetry-collector"},
						map[string]string{"kubernetes.io/metadata.name": "monitoring"}, 4317, corev1.ProtocolTCP)
					if collector != tc.spans {
						t.Errorf("%s may send spans to the collector: %v, want %v", w.component, collector, tc.spans)
					}
				}
				if !slices.Equal(got.anySource, []string{"gateway:8080"}) {
					t.Errorf("ports open to any source: %v, want only the gateway's HTTP port", got.anySource)
				}
			})
			t.Run("autoscalers", func(t *testing.T) {
				var got []string
				deployments := map[string]bool{}
				for _, d := range objectsOf[*appsv1.Deployment](r.objects) {
					deployments[d.Name] = true
					if slices.Contains(tc.hpa, d.Labels["app.kubernetes.io/component"]) && d.Spec.Replicas != nil {
						t.Errorf("deployment %s sets replicas while an HPA scales it", d.Name)
					}
				}
				for _, h := range objectsOf[*autoscalingv2.HorizontalPodAutoscaler](r.objects) {
					if !deployments[h.Spec.ScaleTargetRef.Name] || h.Spec.ScaleTargetRef.Kind != "Deployment" {
						t.Errorf("HPA %s scales %s %s, which the chart does not make", h.Name, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
					}
					got = append(got, h.Labels["app.kubernetes.io/component"])
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.hpa) {
					t.Errorf("HPAs for %v, want %v", got, tc.hpa)
				}
			})
			t.Run("monitoring", func(t *testing.T) {
				sms := objectsOf[*monitoringv1.ServiceMonitor](r.objects)
				rules := objectsOf[*monitoringv1.PrometheusRule](r.objects)
				if tc.monitoring != (len(sms) == 1 && len(rules) == 1) {
					t.Fatalf("%d ServiceMonitors and %d PrometheusRules, monitoring %v", len(sms), len(rules), tc.monitoring)
				}
				for _, sm := range sms {
					if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
						t.Errorf("ServiceMonitor endpoints %+v, want the metrics port", sm.Spec.Endpoints)
					}
				}
			})
		})
	}
}

// TestChartProductionIngress checks the Ingress the production values make:
// TLS, and the proxy settings server-sent events need.
func TestChartProductionIngress(t *testing.T) {
	r, err := render(t, []string{"values-production.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ings := objectsOf[*networkingv1.Ingress](r.objects)
	if len(ings) != 1 {
		t.Fatalf("%d ingresses, want 1", len(ings))
	}
	ing := ings[0]
	for k, want := range map[string]string{
		"nginx.ingress.kubernetes.io/proxy-buffering":    "off",
		"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
	} {
		if ing.Annotations[k] != want {
			t.Errorf("ingress annotation %s = %q, want %q", k, ing.Annotations[k], want)
		}
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "nexus-tls" {
		t.Errorf("ingress TLS %+v", ing.Spec.TLS)
	}
	if b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service; b == nil || b.Name != "nexus-gateway" {
		t.Errorf("ingress backend %+v, want the gateway service", b)
	}
	for _, s := range objectsOf[*corev1.Secret](r.objects) {
		t.Errorf("the production values name an existing Secret, yet the chart made %s", s.Name)
	}
}

// TestChartRefusesIncompleteValues shows that values which cannot work fail
// the render with a message naming the value to set.
func TestChartRefusesIncompleteValues(t *testing.T) {
	cases := []struct {
		name      string
		overrides map[string]any
		want      string
	}{
		{"external redis without a URL", map[string]any{"redis": map[string]any{"enabled": false, "externalCIDR": "10.0.0.0/24"}}, "secrets.redisUrl"},
		{"external redis without a CIDR", map[string]any{"redis": map[string]any{"enabled": false}, "secrets": map[string]any{"redisUrl": "redis://r:6379"}}, "redis.externalCIDR"},
		{"external database without a URL", map[string]any{"postgresql": map[string]any{"enabled": false, "externalCIDR": "10.0.1.0/24"}}, "secrets.databaseUrl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, nil, tc.overrides)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func checkLabels(t *testing.T, r *rendered) {
	for _, o := range r.objects {
		m, err := metaOf(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
			if m.GetLabels()[k] == "" {
				t.Errorf("%T %s lacks the label %s", o, m.GetName(), k)
			}
		}
		if v := m.GetLabels()["app.kubernetes.io/version"]; v != r.chart.Metadata.AppVersion {
			t.Errorf("%T %s: version label %q, want the appVersion %q", o, m.GetName(), v, r.chart.Metadata.AppVersion)
		}
	}
}

func metaOf(o runtime.Object) (metav1.Object, error) {
	type withMeta interface{ GetObjectMeta() metav1.Object }
	if m, ok := o.(withMeta); ok {
		return m.GetObjectMeta(), nil
	}
	return nil, errNoMeta
}

const errNoMeta = constError("object has no metadata")

type constError string

func (e constError) Error() string { return string(e) }

func checkContainers(t *testing.T, r *rendered, ws []workload) {
	for _, w := range ws {
		spec := w.template.Spec
		pod := spec.SecurityContext
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s %s mounts a service account token it does not need", w.kind, w.name)
		}
		for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
			where := w.kind + " " + w.name + " container " + c.Name
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := c.Resources.Requests[res]; !ok || q.IsZero() {
					t.Errorf("%s has no %s request", where, res)
				}
				if q, ok := c.Resources.Limits[res]; !ok || q.IsZero() {
					t.Errorf("%s has no %s limit", where, res)
				}
			}
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("%s has no securityContext", where)
				continue
			}
			nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && pod != nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot)
			if !nonRoot {
				t.Errorf("%s may run as root", where)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s has a writable root filesystem", where)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s allows privilege escalation", where)
			}
			if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s capabilities %+v, want all dropped and none added", where, sc.Capabilities)
			}
			seccomp := sc.SeccompProfile
			if seccomp == nil && pod != nil {
				seccomp = pod.SeccompProfile
			}
			if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s seccomp profile %+v, want RuntimeDefault", where, seccomp)
			}
			if c.StartupProbe == nil || c.ReadinessProbe == nil || c.LivenessProbe == nil {
				t.Errorf("%s lacks a startup, readiness or liveness probe", where)
				continue
			}
			if slices.Contains(grpcServices(), w.component) {
				for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
					if p.GRPC == nil {
						t.Errorf("%s: a gRPC service must use gRPC probes, got %+v", where, p.ProbeHandler)
					}
				}
			}
			if strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":") {
				t.Errorf("%s image %q has no pinned tag", where, c.Image)
			}
			if w.component == "gateway" || slices.Contains(grpcServices(), w.component) {
				if !strings.HasSuffix(c.Image, ":"+r.chart.Metadata.AppVersion) {
					t.Errorf("%s image %q is not the chart's appVersion %s", where, c.Image, r.chart.Metadata.AppVersion)
				}
				if envValue(c, "NEXUS_METRICS_ADDR") == "" {
					t.Errorf("%s sets no NEXUS_METRICS_ADDR", where)
				}
			}
		}
	}
}

// checkStores checks where the orchestrator finds Redis and the capability
// service PostgreSQL: an in-cluster Service the chart makes, or a key of the
// Secret.
func checkStores(t *testing.T, r *rendered, ws []workload, inCluster map[string]bool) {
	services := map[string]bool{}
	for _, s := range objectsOf[*corev1.Service](r.objects) {
		services[s.Name] = true
	}
	cases := []struct {
		component, env, store, service, key string
	}{
		{"orchestrator", "NEXUS_REDIS_URL", "redis", "nexus-redis:6379", "redis-url"},
		{"capability", "NEXUS_DATABASE_URL", "postgresql", "nexus-postgresql:5432", "database-url"},
		{"orchestrator", "NEXUS_DATABASE_URL", "postgresql", "nexus-postgresql:5432", "database-url"},
	}
	for _, c := range cases {
		for _, w := range ws {
			if w.component != c.component {
				continue
			}
			ctr := w.template.Spec.Containers[0]
			var ev *corev1.EnvVar
			for i := range ctr.Env {
				if ctr.Env[i].Name == c.env {
					ev = &ctr.Env[i]
				}
			}
			switch {
			case ev == nil:
				t.Errorf("%s sets no %s", c.component, c.env)
			case inCluster[c.store]:
				host := strings.SplitN(c.service, ":", 2)[0]
				if !strings.Contains(ev.Value, host+":") || !services[host] {
					t.Errorf("%s %s=%q does not name the in-cluster Service %s (made: %v)", c.component, c.env, ev.Value, c.service, services[host])
				}
			default:
				if ev.ValueFrom == nil || ev.ValueFrom.SecretKeyRef == nil || ev.ValueFrom.SecretKeyRef.Key != c.key || ev.ValueFrom.SecretKeyRef.Name != "nexus-secrets" {
					t.Errorf("%s %s comes from %+v, want key %s of the existing Secret", c.component, c.env, ev.ValueFrom, c.key)
				}
			}
		}
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func checkPDBs(t *testing.T, r *rendered, ws []workload) {
	pdbs := objectsOf[*policyv1.PodDisruptionBudget](r.objects)
	for _, w := range ws {
		if w.kind != "Deployment" {
			continue
		}
		n := 0
		for _, p := range pdbs {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(w.template.Labels)) {
				n++
				if p.Spec.MinAvailable == nil && p.Spec.MaxUnavailable == nil {
					t.Errorf("PDB %s sets neither minAvailable nor maxUnavailable", p.Name)
				}
			}
		}
		if n != 1 {
			t.Errorf("deployment %s is covered by %d PodDisruptionBudgets, want 1", w.name, n)
		}
	}
}
