package charttest

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// allowed is what a set of NetworkPolicies lets through, evaluated as the
// Kubernetes NetworkPolicy semantics say: a pod that no policy selects for
// a direction is open in that direction; otherwise a connection passes when
// some rule of a policy selecting the source allows it out and some rule of
// a policy selecting the destination allows it in.
type allowed struct {
	// pods are "src -> dst:port" among the release's pods.
	pods []string
	// external are "src -> cidr[ except [...]]:port" egress to ipBlocks, or
	// "src -> anywhere:port" for a rule without destinations.
	external []string
	// dns lists the components that may reach the cluster DNS on port 53.
	dns []string
	// anySource lists "component:port" open to any source.
	anySource []string
}

// namespaceLabels are the labels of the namespace the test installs into.
func namespaceLabels() labels.Set {
	return labels.Set{"kubernetes.io/metadata.name": namespace}
}

// kubeDNS stands for the cluster DNS pods, in kube-system.
func kubeDNS() (labels.Set, labels.Set) {
	return labels.Set{"k8s-app": "kube-dns"}, labels.Set{"kubernetes.io/metadata.name": "kube-system"}
}

func matches(t *testing.T, sel *metav1.LabelSelector, set labels.Set) bool {
	t.Helper()
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return s.Matches(set)
}

// peerMatches says whether peer admits a pod with podLabels in a namespace
// with nsLabels; policyNS is the policy's own namespace (this release's).
func peerMatches(t *testing.T, peer networkingv1.NetworkPolicyPeer, podLabels, nsLabels labels.Set) bool {
	if peer.IPBlock != nil {
		return false
	}
	if peer.NamespaceSelector == nil {
		return nsLabels.Get("kubernetes.io/metadata.name") == namespace && matches(t, peer.PodSelector, podLabels)
	}
	return matches(t, peer.NamespaceSelector, nsLabels) && matches(t, peer.PodSelector, podLabels)
}

func portMatches(ports []networkingv1.NetworkPolicyPort, port int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil || (p.Port.IntValue() == int(port)) {
			return true
		}
	}
	return false
}

func hasType(p *networkingv1.NetworkPolicy, ty networkingv1.PolicyType) bool {
	return slices.Contains(p.Spec.PolicyTypes, ty)
}

// egressOK says whether src may open port to a pod with dstLabels in nsLabels.
func egressOK(t *testing.T, pols []*networkingv1.NetworkPolicy, src labels.Set, dst, ns labels.Set, port int32, proto corev1.Protocol) bool {
	selected := false
	for _, p := range pols {
		if !hasType(p, networkingv1.PolicyTypeEgress) || !matches(t, &p.Spec.PodSelector, src) {
			continue
		}
		selected = true
		for _, rule := range p.Spec.Egress {
			if !portMatches(rule.Ports, port, proto) {
				continue
			}
			if len(rule.To) == 0 {
				return true
			}
			for _, peer := range rule.To {
				if peerMatches(t, peer, dst, ns) {
					return true
				}
			}
		}
	}
	return !selected
}

// ingressOK says whether dst admits port from a pod with srcLabels.
func ingressOK(t *testing.T, pols []*networkingv1.NetworkPolicy, dst, src labels.Set, port int32) bool {
	return ingressAdmits(t, pols, dst, port, func(peer networkingv1.NetworkPolicyPeer) bool {
		return peerMatches(t, peer, src, namespaceLabels())
	})
}

// ingressAdmits says whether dst admits port from a source that admit
// accepts as one of a rule's peers; a rule without peers admits anyone.
func ingressAdmits(t *testing.T, pols []*networkingv1.NetworkPolicy, dst labels.Set, port int32, admit func(networkingv1.NetworkPolicyPeer) bool) bool {
	selected := false
	for _, p := range pols {
		if !hasType(p, networkingv1.PolicyTypeIngress) || !matches(t, &p.Spec.PodSelector, dst) {
			continue
		}
		selected = true
		for _, rule := range p.Spec.Ingress {
			if !portMatches(rule.Ports, port, corev1.ProtocolTCP) {
				continue
			}
			if len(rule.From) == 0 {
				return true
			}
			for _, peer := range rule.From {
				if admit(peer) {
					return true
				}
			}
		}
	}
	return !selected
}

func policyEdges(t *testing.T, r *rendered, ws []workload) allowed {
	t.Helper()
	pols := objectsOf[*networkingv1.NetworkPolicy](r.objects)
	var a allowed
	for _, src := range ws {
		sl := labels.Set(src.template.Labels)
		for _, dst := range ws {
			if dst.component == src.component {
				continue
			}
			dl := labels.Set(dst.template.Labels)
			for _, c := range dst.template.Spec.Containers {
				for _, p := range c.Ports {
					if egressOK(t, pols, sl, dl, namespaceLabels(), p.ContainerPort, corev1.ProtocolTCP) && ingressOK(t, pols, dl, sl, p.ContainerPort) {
						a.pods = append(a.pods, fmt.Sprintf("%s -> %s:%d", src.component, dst.component, p.ContainerPort))
					}
				}
			}
		}
		dnsPods, dnsNS := kubeDNS()
		if egressOK(t, pols, sl, dnsPods, dnsNS, 53, corev1.ProtocolUDP) {
			a.dns = append(a.dns, src.component)
		}
		for _, p := range pols {
			if !hasType(p, networkingv1.PolicyTypeEgress) || !matches(t, &p.Spec.PodSelector, sl) {
				continue
			}
			for _, rule := range p.Spec.Egress {
				var ports []int32
				for _, pp := range rule.Ports {
					if pp.Port != nil {
						ports = append(ports, int32(pp.Port.IntValue()))
					}
				}
				if len(rule.To) == 0 {
					a.external = append(a.external, fmt.Sprintf("%s -> anywhere:%v", src.component, ports))
				}
				for _, peer := range rule.To {
					if peer.IPBlock == nil {
						continue
					}
					dest := peer.IPBlock.CIDR
					if len(peer.IPBlock.Except) > 0 {
						dest += fmt.Sprintf(" except %v", peer.IPBlock.Except)
					}
					for _, port := range ports {
						a.external = append(a.external, fmt.Sprintf("%s -> %s:%d", src.component, dest, port))
					}
				}
			}
		}
		// Ports any source may reach.
		for _, c := range src.template.Spec.Containers {
			for _, p := range c.Ports {
				if ingressOK(t, pols, sl, labels.Set{"some": "stranger"}, p.ContainerPort) && ingressFromAnyNamespace(t, pols, sl, p.ContainerPort) {
					a.anySource = append(a.anySource, fmt.Sprintf("%s:%d", src.component, p.ContainerPort))
				}
			}
		}
	}
	slices.Sort(a.pods)
	slices.Sort(a.external)
	slices.Sort(a.dns)
	slices.Sort(a.anySource)
	return a
}

// ingressFromAnyNamespace says whether a pod in a namespace with no labels
// may reach port: true only for rules without sources.
func ingressFromAnyNamespace(t *testing.T, pols []*networkingv1.NetworkPolicy, dst labels.Set, port int32) bool {
	return ingressAdmits(t, pols, dst, port, func(peer networkingv1.NetworkPolicyPeer) bool {
		return peer.IPBlock != nil || peerMatches(t, peer, labels.Set{"some": "stranger"}, labels.Set{"kubernetes.io/metadata.name": "elsewhere"})
	})
}
