package orchestrator

import (
	"strings"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
)

// The public package has its own types and closed sets, so clients never
// depend on the internal contracts between services. These functions are
// the one place where internal values become public ones.

// firstRunes cuts s to at most n runes.
func firstRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// publicModel is a catalog model as clients see it: the vendor as the
// model id's prefix names it ("openai-compat"), the features by their short
// names ("prompt_cache").
func publicModel(m *modelv1.ModelInfo) *agentv1.Model {
	vendor, _, _ := strings.Cut(m.GetId(), "/")
	features := make([]string, 0, len(m.GetFeatures()))
	for _, f := range m.GetFeatures() {
		features = append(features, enumname.Short(f))
	}
	return &agentv1.Model{
		Id: m.GetId(), Vendor: vendor, DisplayName: m.GetDisplayName(), ContextWindow: m.GetContextWindow(),
		Features: features, Available: m.GetAvailable(), Note: m.GetNote(),
		InputPrice: m.GetPricing().GetInput(), OutputPrice: m.GetPricing().GetOutput(),
	}
}

func publicHost(h *capabilityv1.HostProvider) *agentv1.Host {
	return &agentv1.Host{HostApp: h.GetHostApp(), DisplayName: h.GetDisplayName(), CapabilityVersion: h.GetCapabilityVersion(), Language: h.GetLanguage()}
}
