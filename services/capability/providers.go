package capability

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// The capability version names the behaviour below (epilogues, guidance, view
// defaults) and moves with a server deploy, never with a desktop installer.
const (
	freecadVersion = "2026.12.1"
	revitVersion   = "2026.12.2"
)

//go:embed hosts/*.py hosts/*.md hosts/*.json
var hostFiles embed.FS

// provider is one host application's behaviour as data.
type provider struct {
	info     *capabilityv1.HostProvider
	epilogue string
	guidance string
}

// registry holds the host providers by host id.
type registry struct {
	byID map[string]*provider
	ids  []string
}

func newRegistry() (*registry, error) {
	specs := []struct {
		info                   *capabilityv1.HostProvider
		epilogue, doc, framing string
	}{
		{
			info: &capabilityv1.HostProvider{HostApp: "freecad", DisplayName: "FreeCAD", CapabilityVersion: freecadVersion,
				Language: "python", ViewDefaults: &capabilityv1.ViewDefaults{View: "isometric", MaxPx: 1568}},
			epilogue: "hosts/freecad_epilogue.py", doc: "hosts/freecad_guidance.md", framing: "hosts/freecad_framing.json",
		},
		{
			info: &capabilityv1.HostProvider{HostApp: "revit", DisplayName: "Autodesk Revit", CapabilityVersion: revitVersion,
				Language: "python", ViewDefaults: &capabilityv1.ViewDefaults{View: "3d", MaxPx: 1568}},
			epilogue: "hosts/revit_epilogue.py", doc: "hosts/revit_guidance.md", framing: "hosts/revit_framing.json",
		},
	}
	report, err := hostFiles.ReadFile("hosts/change_report.py")
	if err != nil {
		return nil, fmt.Errorf("read change report: %w", err)
	}
	r := &registry{byID: make(map[string]*provider, len(specs))}
	for _, s := range specs {
		collector, err := hostFiles.ReadFile(s.epilogue)
		if err != nil {
			return nil, fmt.Errorf("read %s epilogue: %w", s.info.HostApp, err)
		}
		// The epilogue is the host's collector followed by the shared report.
		epilogue := string(collector) + "\n\n" + string(report)
		guidance, err := hostFiles.ReadFile(s.doc)
		if err != nil {
			return nil, fmt.Errorf("read %s guidance: %w", s.info.HostApp, err)
		}
		framing, err := loadFraming(s.framing)
		if err != nil {
			return nil, fmt.Errorf("%s framing rules: %w", s.info.HostApp, err)
		}
		s.info.ViewDefaults.Framing = framing
		r.byID[s.info.HostApp] = &provider{info: s.info, epilogue: epilogue, guidance: string(guidance)}
		r.ids = append(r.ids, s.info.HostApp)
	}
	sort.Strings(r.ids)
	return r, nil
}

// lookup answers the provider of hostApp or an error naming the known hosts.
func (r *registry) lookup(hostApp string) (*provider, error) {
	if hostApp == "" {
		return nil, fmt.Errorf("host_app is empty; known hosts: %s", strings.Join(r.ids, ", "))
	}
	p, ok := r.byID[hostApp]
	if !ok {
		return nil, fmt.Errorf("unknown host %q; known hosts: %s", hostApp, strings.Join(r.ids, ", "))
	}
	return p, nil
}

func (r *registry) list() []*capabilityv1.HostProvider {
	out := make([]*capabilityv1.HostProvider, 0, len(r.ids))
	for _, id := range r.ids {
		out = append(out, r.byID[id].info)
	}
	return out
}

// stamp answers the provider's epilogue with its provenance.
func (p *provider) stamp() *capabilityv1.StampedScript {
	sum := sha256.Sum256([]byte(p.epilogue))
	return &capabilityv1.StampedScript{
		HostApp:           p.info.HostApp,
		CapabilityVersion: p.info.CapabilityVersion,
		Code:              p.epilogue,
		ContentHash:       hex.EncodeToString(sum[:]),
	}
}

// loadFraming reads a host's rules for framing what an automation changed,
// and checks them, so a bad rule fails at start and not in a render.
func loadFraming(path string) (*hostv1.Framing, error) {
	raw, err := hostFiles.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	f := &hostv1.Framing{}
	if err := protojson.Unmarshal(raw, f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	switch {
	case f.GetMargin() < 0 || f.GetMargin() > 10:
		return nil, fmt.Errorf("%s: margin must be between 0 and 10, got %g", path, f.GetMargin())
	case f.GetUnit() == hostv1.LengthUnit_LENGTH_UNIT_UNSPECIFIED:
		return nil, fmt.Errorf("%s: unit must name the host's length unit (LENGTH_UNIT_MILLIMETRE or LENGTH_UNIT_FOOT), which minExtent is in", path)
	case f.GetMinExtent() < 0:
		return nil, fmt.Errorf("%s: minExtent must be 0 or more, got %g", path, f.GetMinExtent())
	case f.GetPlanMaxHeightRatio() < 0:
		return nil, fmt.Errorf("%s: planMaxHeightRatio must be 0 or more, got %g", path, f.GetPlanMaxHeightRatio())
	case f.GetWholeShare() <= 0 || f.GetWholeShare() > 1:
		return nil, fmt.Errorf("%s: wholeShare must be in (0, 1], got %g", path, f.GetWholeShare())
	case len(f.GetGeometricProperties()) == 0:
		return nil, fmt.Errorf("%s: geometricProperties must name at least one property", path)
	}
	return f, nil
}
