package explain

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// maxClaimLines bounds the members whose DRA claims step 4 lists one by one.
const maxClaimLines = 8

// claimsOf reads the DRA ResourceClaims of members, by namespace/name; a claim that could
// not be read maps to nil.
func claimsOf(ctx context.Context, c Reader, members []*corev1.Pod) map[string]*resourcev1.ResourceClaim {
	var out map[string]*resourcev1.ResourceClaim
	gvr := resourcev1.SchemeGroupVersion.WithResource("resourceclaims")
	for _, p := range members {
		for i := range p.Spec.ResourceClaims {
			name, _, err := resourceclaim.Name(p, &p.Spec.ResourceClaims[i])
			if err != nil || name == nil {
				continue
			}
			key := p.Namespace + "/" + *name
			if out == nil {
				out = map[string]*resourcev1.ResourceClaim{}
			}
			if _, done := out[key]; done {
				continue
			}
			out[key] = nil
			u, err := c.Object(ctx, gvr, p.Namespace, *name)
			if err != nil {
				continue
			}
			claim := &resourcev1.ResourceClaim{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, claim) == nil {
				out[key] = claim
			}
		}
	}
	return out
}

// claimLines describes each member's DRA claims for step 4: the devices allocated to
// each, or that it is not allocated (why none fit is the recorded diagnosis), or that
// it does not exist yet.
func claimLines(f Facts) []string {
	var lines []string
	shown := 0
	for _, p := range f.Members {
		if len(p.Spec.ResourceClaims) == 0 {
			continue
		}
		if shown == maxClaimLines {
			lines = append(lines, "… and the claims of more members")
			break
		}
		shown++
		var parts []string
		for i := range p.Spec.ResourceClaims {
			pc := &p.Spec.ResourceClaims[i]
			name, _, err := resourceclaim.Name(p, pc)
			switch {
			case err != nil:
				parts = append(parts, fmt.Sprintf("%s: its ResourceClaim does not exist yet", pc.Name))
				continue
			case name == nil:
				continue
			}
			claim := f.Claims[p.Namespace+"/"+*name]
			parts = append(parts, pc.Name+": "+claimText(claim, *name, p))
		}
		lines = append(lines, fmt.Sprintf("member %s claims %s", p.Name, strings.Join(parts, "; ")))
	}
	return lines
}

// claimText is one claim as claimLines shows it.
func claimText(claim *resourcev1.ResourceClaim, name string, p *corev1.Pod) string {
	if claim == nil {
		return "claim " + name + " not found"
	}
	a := claim.Status.Allocation
	if a == nil {
		return "claim " + name + " not allocated"
	}
	var devs []string
	for _, r := range a.Devices.Results {
		devs = append(devs, r.Driver+"/"+r.Pool+"/"+r.Device)
	}
	reserved := "not reserved for it"
	for _, r := range claim.Status.ReservedFor {
		if r.UID == p.UID {
			reserved = "reserved for it"
		}
	}
	return fmt.Sprintf("claim %s allocated %s (%s)", name, strings.Join(devs, ", "), reserved)
}
