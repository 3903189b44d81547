// Package charttest renders the Helm chart in deploy/nexus with the Helm Go
// SDK and checks what a cluster would get: every object strictly decoded
// against the Kubernetes API types, the pods' security and probes, PDBs,
// and NetworkPolicies that allow exactly the calls the design makes.
package charttest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/runtime"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// chartDir is the chart under test.
const chartDir = "../nexus"

// namespace is where the test installs the release.
const namespace = "nexus"

// rendered is one render of the chart: its objects, decoded.
type rendered struct {
	chart   *chart.Chart
	objects []runtime.Object
	notes   string
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// render renders the chart as `helm template` would, with the values files
// given over the chart's defaults and then the overrides, and decodes every
// object strictly.
func render(t *testing.T, valuesFiles []string, overrides map[string]any) (*rendered, error) {
	t.Helper()
	c := loadChart(t)
	vals := map[string]any{}
	for _, f := range valuesFiles {
		v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, f))
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	vals = chartutil.CoalesceTables(overrides, vals)
	caps := chartutil.DefaultCapabilities.Copy()
	top, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "nexus", Namespace: namespace, IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, fmt.Errorf("render values: %w", err)
	}
	out, err := (&engine.Engine{Strict: true}).Render(c, top)
	if err != nil {
		return nil, err
	}
	r := &rendered{chart: c}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	dec := decoder(t)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			r.notes = out[name]
			continue
		}
		for i, doc := range splitDocs(out[name]) {
			obj, _, err := dec.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s document %d does not decode strictly: %v\n%s", name, i, err, doc)
			}
			r.objects = append(r.objects, obj)
		}
	}
	return r, nil
}

// decoder decodes YAML into the Kubernetes API types, failing on unknown or
// duplicate fields.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return k8sjson.NewSerializerWithOptions(k8sjson.DefaultMetaFactory, s, s, k8sjson.SerializerOptions{Yaml: true, Strict: true})
}

// splitDocs splits a rendered template into its non-empty YAML documents.
func splitDocs(s string) []string {
	var docs []string
	for _, d := range strings.Split("\n"+s, "\n---") {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(s string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
