package modelrouter

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
)

// Features are what a model can do; a catalog file names each by its short
// name ("thinking", "prompt_cache").
type Features []modelv1.ModelFeature

// UnmarshalYAML reads the names, refusing one the enum does not have.
func (f *Features) UnmarshalYAML(n *yaml.Node) error {
	var names []string
	if err := n.Decode(&names); err != nil {
		return err
	}
	d := modelv1.ModelFeature(0).Descriptor()
	out := make(Features, 0, len(names))
	for _, name := range names {
		v, ok := enumname.Parse(d, name)
		if !ok {
			return fmt.Errorf("line %d: feature %q is none of %s", n.Line, name, strings.Join(enumname.Names(d), ", "))
		}
		out = append(out, modelv1.ModelFeature(v))
	}
	*f = out
	return nil
}

// vendorOf is the enum value of a vendor name of the catalog.
func vendorOf(name string) modelv1.Vendor {
	return map[string]modelv1.Vendor{
		VendorAnthropic: modelv1.Vendor_VENDOR_ANTHROPIC,
		VendorOpenAI:    modelv1.Vendor_VENDOR_OPENAI,
		VendorGemini:    modelv1.Vendor_VENDOR_GEMINI,
		VendorCompat:    modelv1.Vendor_VENDOR_OPENAI_COMPAT,
		VendorReplay:    modelv1.Vendor_VENDOR_REPLAY,
	}[name]
}
