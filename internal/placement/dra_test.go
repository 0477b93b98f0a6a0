package placement_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// draCluster is nodes nodes with gpus DRA GPUs each (no nvidia.com/gpu), the first half
// in clique-a and the rest in clique-b, labelled with their clique.
func draCluster(nodes, gpus int) *cluster.Snapshot {
	var ns []*corev1.Node
	for i := range nodes {
		ns = append(ns, gt.Node(fmt.Sprintf("n%d", i)).Label("clique", clique(i, nodes)).Obj())
	}
	snap := cluster.New(ns, nil)
	snap.SetObject(gt.DeviceClass())
	for i := range nodes {
		snap.SetObject(gt.GPUSlice(fmt.Sprintf("n%d", i), gpus, clique(i, nodes)))
	}
	return snap
}

func clique(i, nodes int) string {
	if i < nodes/2 {
		return "clique-a"
	}
	return "clique-b"
}

// draGang is a gang of n workers, each with its own claim of per GPUs (made on snap),
// with the claims' selectors.
func draGang(snap *cluster.Snapshot, job string, n int, per int64, selectors ...string) placement.Group {
	return gang(job, n, func(i int) *corev1.Pod {
		name := fmt.Sprintf("%s-%d", job, i)
		snap.SetObject(gt.GPUClaim("default", name+"-gpu", per, selectors...))
		return gt.Pod(name).UID("uid-"+name).DeviceClaim("gpu", name+"-gpu").Obj()
	})
}

// TestGangAllocatesDevices: 4 workers of 1 GPU on 2 nodes of 2 GPUs take every device
// once, each claim allocated on its member's node and assumed on the snapshot; a fifth
// worker's gang is Impossible and the reason names its claim and class.
func TestGangAllocatesDevices(t *testing.T) {
	snap := draCluster(2, 2)
	plan, diag := placement.Place(snap, draGang(snap, "a", 4, 1), placement.Options{})
	if plan == nil {
		t.Fatalf("4 one-GPU workers on 4 GPUs: %v", diag)
	}
	taken := map[string]bool{}
	for _, as := range plan.Assignments {
		if len(as.Claims) != 1 || as.Claims[0].Allocation == nil {
			t.Fatalf("%s: claims %+v", as.Member, as.Claims)
		}
		r := as.Claims[0].Allocation.Devices.Results[0]
		dev := r.Pool + "/" + r.Device
		if r.Pool != as.Node || taken[dev] {
			t.Fatalf("%s on %s got %s (taken %v)", as.Member, as.Node, dev, taken)
		}
		taken[dev] = true
		name := strings.TrimPrefix(as.Member, "default/")
		if c := snap.ResourceClaim("default/" + name + "-gpu"); c.Status.Allocation == nil || len(c.Status.ReservedFor) != 1 {
			t.Fatalf("%s: claim not assumed: %+v", as.Member, c.Status)
		}
	}
	plan.Revert()
	if c := snap.ResourceClaim("default/a-0-gpu"); c.Status.Allocation != nil {
		t.Fatalf("reverted plan left an allocation: %+v", c.Status)
	}

	plan, diag = placement.Place(snap, draGang(snap, "b", 5, 1), placement.Options{})
	if plan != nil || diag.Code != placement.Impossible {
		t.Fatalf("5 one-GPU workers on 4 GPUs: plan %v, diagnosis %v", plan, diag)
	}
	if s := diag.String(); !strings.Contains(s, "cannot allocate all claims (claim default/b-4-gpu: request gpus: 1 of class gpu.nvidia.com)") {
		t.Fatalf("diagnosis does not name the claim: %s", s)
	}
	if b := diag.Blocked; b == nil || len(b.Shape.Reasons) == 0 || b.Shape.Reasons[0].Plugin != "DynamicResources" {
		t.Fatalf("blocked step does not name the plugin: %+v", b)
	}
}

// TestSelectorNoDeviceMatches: a claim whose selector matches no device is Impossible,
// naming the selector.
func TestSelectorNoDeviceMatches(t *testing.T) {
	snap := draCluster(2, 2)
	sel := `device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100"`
	_, diag := placement.Place(snap, draGang(snap, "a", 1, 1, sel), placement.Options{})
	if diag == nil || diag.Code != placement.Impossible || !strings.Contains(diag.String(), sel) {
		t.Fatalf("want Impossible naming the selector, got %v", diag)
	}
	sel = `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`
	if plan, diag := placement.Place(snap, draGang(snap, "b", 1, 1, sel), placement.Options{}); plan == nil {
		t.Fatalf("a selector every device matches: %v", diag)
	}
}

// TestDevicesInUseWait: with 3 of 4 GPUs allocated to another claim, a gang of 2 is
// Unschedulable (it would fit the empty cluster), and nothing is left assumed.
func TestDevicesInUseWait(t *testing.T) {
	snap := draCluster(2, 2)
	other := draGang(snap, "o", 3, 1)
	plan, diag := placement.Place(snap, other, placement.Options{})
	if plan == nil {
		t.Fatal(diag)
	}
	before := fmt.Sprint(snap.ResourceClaim("default/o-0-gpu").Status)
	_, diag = placement.Place(snap, draGang(snap, "w", 2, 1), placement.Options{})
	if diag == nil || diag.Code != placement.Unschedulable {
		t.Fatalf("want Unschedulable, got %v", diag)
	}
	if c := snap.ResourceClaim("default/w-0-gpu"); c.Status.Allocation != nil {
		t.Fatalf("a failed gang left its claim allocated: %+v", c.Status)
	}
	if after := fmt.Sprint(snap.ResourceClaim("default/o-0-gpu").Status); after != before {
		t.Fatalf("a failed gang changed another group's claim: %s, before %s", after, before)
	}
	plan.Revert()
	if plan, diag := placement.Place(snap, draGang(snap, "w", 2, 1), placement.Options{}); plan == nil {
		t.Fatalf("after the other group left: %v", diag)
	}
}

// TestClaimNotMadeYet: a member whose template's claim the resourceclaim controller has
// not made yet waits (Unschedulable), with the reason naming the entry.
func TestClaimNotMadeYet(t *testing.T) {
	snap := draCluster(2, 2)
	p := gt.Pod("w").UID("uid-w").Obj()
	tmpl := "gpu-template"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	_, diag := placement.Place(snap, single(p), placement.Options{})
	if diag == nil || diag.Code != placement.Unschedulable || !strings.Contains(diag.String(), `spec.resourceClaims gpu`) {
		t.Fatalf("want Unschedulable naming the claim entry, got %v", diag)
	}
}

// TestSharedClaimHoldsMembersTogether: members sharing one claim of 2 GPUs land on the
// node its devices are on.
func TestSharedClaimHoldsMembersTogether(t *testing.T) {
	snap := draCluster(2, 2)
	snap.SetObject(gt.GPUClaim("default", "shared", 2))
	g := gang("s", 3, func(i int) *corev1.Pod {
		name := fmt.Sprintf("s-%d", i)
		return gt.Pod(name).UID("uid-"+name).DeviceClaim("gpu", "shared").Obj()
	})
	plan, diag := placement.Place(snap, g, placement.Options{})
	if plan == nil {
		t.Fatal(diag)
	}
	if nodes := nodesOf(plan); len(nodes) != 1 {
		t.Fatalf("members sharing a claim on %v", nodes)
	}
	if c := snap.ResourceClaim("default/shared"); len(c.Status.ReservedFor) != 3 {
		t.Fatalf("reservedFor %+v", c.Status.ReservedFor)
	}
	if plan.Assignments[0].Claims[0].Allocation == nil || plan.Assignments[1].Claims[0].Allocation != nil {
		t.Fatalf("the first member allocates, the others reserve: %+v", plan.Assignments)
	}
}

// TestCliqueDomain: a gang required in one NVLink clique (the nodes' label) fits only
// inside one: 6 workers of 1 GPU on 2 cliques of 2 nodes × 2 GPUs do not fit, 4 do, all
// in one clique.
func TestCliqueDomain(t *testing.T) {
	snap := draCluster(4, 2)
	g := draGang(snap, "c", 6, 1)
	g.Topology.Required = "clique"
	if plan, _ := placement.Place(snap, g, placement.Options{}); plan != nil {
		t.Fatalf("6 workers in one clique of 4 GPUs: %v", nodesOf(plan))
	}
	g = draGang(snap, "d", 4, 1)
	g.Topology.Required = "clique"
	plan, diag := placement.Place(snap, g, placement.Options{})
	if plan == nil {
		t.Fatal(diag)
	}
	cliques := map[string]bool{}
	for _, as := range plan.Assignments {
		cliques[snap.Node(as.Node).Node.Labels["clique"]] = true
	}
	if len(cliques) != 1 || plan.Domain == "" {
		t.Fatalf("cliques %v, domain %q", cliques, plan.Domain)
	}
}

// TestDeviceSignature: gangs whose members' claims come from one template share a
// signature (one verdict serves both), until one's claims are made; gangs of named
// claims do not.
func TestDeviceSignature(t *testing.T) {
	fromTemplate := func(job string, made bool) placement.Group {
		return gang(job, 2, func(i int) *corev1.Pod {
			p := gt.Pod(fmt.Sprintf("%s-%d", job, i)).Obj()
			tmpl := "one-gpu"
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
			if made {
				name := p.Name + "-gpu-x1"
				p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &name}}
			}
			return p
		})
	}
	if a, b := placement.Signature(fromTemplate("a", true)), placement.Signature(fromTemplate("b", true)); a != b {
		t.Errorf("gangs of one template: signatures differ:\n%s\n%s", a, b)
	}
	if a, b := placement.Signature(fromTemplate("a", true)), placement.Signature(fromTemplate("b", false)); a == b {
		t.Errorf("claims made and not made yet share a signature: %s", a)
	}
	snap := draCluster(1, 2)
	if a, b := placement.Signature(draGang(snap, "a", 2, 1)), placement.Signature(draGang(snap, "b", 2, 1)); a == b {
		t.Errorf("gangs of distinct named claims share a signature: %s", a)
	}
}

// TestMatchAttributeAndAllMode: the allocator's constraints hold inside the group's plan.
// A claim of 2 devices with matchAttribute on a numa attribute fits only the node whose
// two devices share a numa node; a claim of all matching devices takes a whole node, so
// the next member's claim goes to the other.
func TestMatchAttributeAndAllMode(t *testing.T) {
	snap := draCluster(2, 2)
	mixed := gt.GPUSlice("n0", 2, "clique-a")
	same := gt.GPUSlice("n1", 2, "clique-b")
	for i := range 2 {
		mixed.Spec.Devices[i].Attributes["numa"] = resourcev1.DeviceAttribute{IntValue: ptr.To(int64(i))}
		same.Spec.Devices[i].Attributes["numa"] = resourcev1.DeviceAttribute{IntValue: ptr.To(int64(0))}
	}
	mixed.ResourceVersion, same.ResourceVersion = "2", "2"
	snap.SetObject(mixed)
	snap.SetObject(same)
	pair := gt.GPUClaim("default", "pair", 2)
	attr := resourcev1.FullyQualifiedName("gpu.nvidia.com/numa")
	pair.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{MatchAttribute: &attr}}
	snap.SetObject(pair)
	plan, diag := placement.Place(snap, single(gt.Pod("p").UID("uid-p").DeviceClaim("gpu", "pair").Obj()), placement.Options{})
	if plan == nil {
		t.Fatal(diag)
	}
	if n := plan.Assignments[0].Node; n != "n1" {
		t.Fatalf("a claim of 2 devices on one numa node placed on %s", n)
	}
	plan.Revert()

	all := gt.GPUClaim("default", "all", 0)
	all.Spec.Devices.Requests[0].Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	all.Spec.Devices.Requests[0].Exactly.Count = 0
	snap.SetObject(all)
	snap.SetObject(gt.GPUClaim("default", "one", 2))
	g := gang("g", 2, func(i int) *corev1.Pod {
		claim := []string{"all", "one"}[i]
		return gt.Pod(claim).UID("uid-"+claim).DeviceClaim("gpu", claim).Obj()
	})
	plan, diag = placement.Place(snap, g, placement.Options{})
	if plan == nil {
		t.Fatal(diag)
	}
	if a, b := plan.Assignments[0], plan.Assignments[1]; a.Node == b.Node || len(a.Claims[0].Allocation.Devices.Results) != 2 {
		t.Fatalf("all-devices member on %s with %d devices, next member on %s", a.Node, len(a.Claims[0].Allocation.Devices.Results), b.Node)
	}
}

// TestNarrowClaimsAllocatedFirst: a node of three GPUs; a gang's first and last
// members take any GPU, its middle one only gpu-0. Allocated in the members' order (or
// the reverse), a member that takes any GPU would take gpu-0 first and leave the middle
// one nothing, and the group would be Impossible; placement tries again with the claim
// that selects first, and places all three.
func TestNarrowClaimsAllocatedFirst(t *testing.T) {
	snap := draCluster(1, 3)
	snap.SetObject(gt.GPUClaim("default", "any-0-gpu", 1))
	snap.SetObject(gt.GPUClaim("default", "zero-gpu", 1, fmt.Sprintf("device.attributes[%q].index == 0", gt.GPUDriver)))
	snap.SetObject(gt.GPUClaim("default", "any-1-gpu", 1))
	var pods []*corev1.Pod
	for _, name := range []string{"any-0", "zero", "any-1"} {
		pods = append(pods, gt.Pod(name).UID("uid-"+name).DeviceClaim("gpu", name+"-gpu").Obj())
	}
	plan, diag := placement.Place(snap, gang("g", 3, func(i int) *corev1.Pod { return pods[i] }), placement.Options{})
	if plan == nil {
		t.Fatalf("not placed, though gpu-0 can serve the middle member and the others the rest: %v", diag)
	}
	got := map[string]string{}
	for _, as := range plan.Assignments {
		got[as.Member] = as.Claims[0].Allocation.Devices.Results[0].Device
	}
	if got["default/zero"] != "gpu-0" || len(got) != 3 {
		t.Fatalf("devices %v, want gpu-0 for zero and the others for any-0 and any-1", got)
	}
}

// TestExtendedResourceOnMixedNodes: the GPU DeviceClass provides nvidia.com/gpu through
// DRA; n0 and n1 publish 2 DRA GPUs each, n2 has 2 nvidia.com/gpu in its allocatable
// (a device plugin). A gang of 3 asking for 2 each fits, one member per node, as
// kube-scheduler places them: on n2 by counting, with no claim, on n0 and n1 with a
// claim of 2 devices of the member's node. A fourth member does not fit, and the
// reason says the devices are short, not that nodes have no nvidia.com/gpu.
func TestExtendedResourceOnMixedNodes(t *testing.T) {
	snap := draCluster(2, 2)
	class := gt.DeviceClass()
	class.Spec.ExtendedResourceName = ptr.To(string(gt.GPU))
	snap.SetObject(class)
	snap.SetNode(gt.Node("n2").GPU(2).Obj())
	pods := func(i int) *corev1.Pod {
		return gt.Pod(fmt.Sprintf("w-%d", i)).UID(fmt.Sprintf("uid-w-%d", i)).GPU(2).Obj()
	}
	plan, diag := placement.Place(snap, gang("w", 3, pods), placement.Options{})
	if plan == nil {
		t.Fatalf("3 members of 2 GPUs on 2 DRA nodes and a device plugin node: %v", diag)
	}
	nodes := map[string]bool{}
	for _, as := range plan.Assignments {
		nodes[as.Node] = true
		switch {
		case as.Node == "n2" && len(as.Claims) != 0:
			t.Errorf("%s on n2 (device plugin): claims %+v, want none", as.Member, as.Claims)
		case as.Node != "n2" && (len(as.Claims) != 1 || as.Claims[0].Extended == nil || len(as.Claims[0].Allocation.Devices.Results) != 2 ||
			as.Claims[0].Allocation.Devices.Results[0].Pool != as.Node):
			t.Errorf("%s on %s: claims %+v, want one extended claim of 2 devices of the node", as.Member, as.Node, as.Claims)
		}
	}
	if len(nodes) != 3 {
		t.Errorf("members on %v, want one per node", nodes)
	}
	plan.Revert()
	if plan, diag = placement.Place(snap, gang("w", 4, pods), placement.Options{}); plan != nil {
		t.Fatalf("4 members of 2 GPUs placed on 6 GPUs: %+v", plan.Assignments)
	}
	if text := diag.String(); !strings.Contains(text, "cannot allocate all claims") || strings.Contains(text, "largest eligible node") {
		t.Errorf("diagnosis %q: want the devices short, not the nodes' nvidia.com/gpu", text)
	}
}

// TestMembersWithDevicesPackTheirNodes: two nodes of four DRA GPUs; a member holds one
// GPU of n1, and a pod that asks for no GPU takes most of n0's cpu. A gang of two
// one-GPU members, by claims or by nvidia.com/gpu that a DeviceClass provides, goes to
// n1, whose GPUs are already in use, and leaves n0's four whole for a gang that needs a
// node's four, though n0 has less cpu free.
func TestMembersWithDevicesPackTheirNodes(t *testing.T) {
	for _, extended := range []bool{false, true} {
		t.Run(fmt.Sprintf("extended=%v", extended), func(t *testing.T) {
			snap := draCluster(2, 4)
			if extended {
				class := gt.DeviceClass()
				class.Spec.ExtendedResourceName = ptr.To(string(gt.GPU))
				snap.SetObject(class)
			}
			member := func(name string) *corev1.Pod {
				b := gt.Pod(name).UID("uid-"+name).Req(corev1.ResourceCPU, "1")
				if extended {
					return b.GPU(1).Obj()
				}
				snap.SetObject(gt.GPUClaim("default", name+"-gpu", 1))
				return b.DeviceClaim("gpu", name+"-gpu").Obj()
			}
			first := member("first")
			first.Spec.NodeSelector = map[string]string{"clique": "clique-b"}
			if plan, diag := placement.Place(snap, gang("first", 1, func(int) *corev1.Pod { return first }), placement.Options{}); plan == nil || plan.Assignments[0].Node != "n1" {
				t.Fatalf("first: plan %+v (%v), want it on n1", plan, diag)
			}
			snap.AddPod(gt.Pod("hog").UID("uid-hog").Node("n0").Req(corev1.ResourceCPU, "24").Obj())
			plan, diag := placement.Place(snap, gang("w", 2, func(i int) *corev1.Pod { return member(fmt.Sprintf("w-%d", i)) }), placement.Options{})
			if plan == nil {
				t.Fatal(diag)
			}
			for _, as := range plan.Assignments {
				if as.Node != "n1" {
					t.Errorf("%s on %s, want n1, whose GPUs are in use, not n0's whole four", as.Member, as.Node)
				}
			}
		})
	}
}

// TestMembersPackByFreeDevicesOfTheirClass: the free devices that rank nodes for
// a one-GPU member are the GPUs it can be given: n0, with one GPU of two left, comes
// before n1's two whole ones, whatever else n0 has (eight NICs of another driver) or
// has lost (a GPU tainted NoSchedule). (All of a node's devices counted, of any class
// and tainted or not: n1 came first, and a member that needs both of a node's GPUs
// later found none.)
func TestMembersPackByFreeDevicesOfTheirClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(snap *cluster.Snapshot)
	}{
		{"other class", func(snap *cluster.Snapshot) {
			// Eight NICs on n0, of a class of their own; one of n0's GPUs in use.
			nics := gt.GPUSlice("n0", 8, "clique-a")
			nics.Name, nics.Spec.Driver, nics.Spec.Pool.Name = "n0-nics", "nic.example.com", "n0-nics"
			snap.SetObject(nics)
			snap.SetObject(&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "nic", ResourceVersion: "1"},
				Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
					CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "nic.example.com"`}}}}})
			first := gt.Pod("first").UID("uid-first").DeviceClaim("gpu", "first-gpu").Obj()
			first.Spec.NodeSelector = map[string]string{"clique": "clique-a"}
			snap.SetObject(gt.GPUClaim("default", "first-gpu", 1))
			if plan, diag := placement.Place(snap, gang("first", 1, func(int) *corev1.Pod { return first }), placement.Options{}); plan == nil || plan.Assignments[0].Node != "n0" {
				t.Fatalf("first: plan %+v (%v), want it on n0", plan, diag)
			}
		}},
		{"tainted", func(snap *cluster.Snapshot) {
			// One of n0's GPUs drained; n1's cpu mostly taken, which would put n1 first
			// were the nodes' free devices the same.
			snap.SetObject(gt.DeviceTaintRule("drain", "n0", "gpu-0", resourcev1.DeviceTaintEffectNoSchedule))
			snap.AddPod(gt.Pod("hog").UID("uid-hog").Node("n1").Req(corev1.ResourceCPU, "24").Obj())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := draCluster(2, 2)
			tc.setup(snap)
			snap.SetObject(gt.GPUClaim("default", "w-gpu", 1))
			w := gt.Pod("w").UID("uid-w").DeviceClaim("gpu", "w-gpu").Obj()
			plan, diag := placement.Place(snap, gang("w", 1, func(int) *corev1.Pod { return w }), placement.Options{})
			if plan == nil {
				t.Fatal(diag)
			}
			if got := plan.Assignments[0].Node; got != "n0" {
				t.Errorf("w on %s, want n0, whose one GPU left is the fewest a node can give it", got)
			}
		})
	}
}

// TestMembersThatTolerateADrainCountItsDevices: n0's gpu-0 is drained, and n0 has less
// cpu free; one of n1's GPUs is in use. A member whose claim tolerates the drain can
// have both of n0's GPUs, so n1, with one left, is the tightest for it; for a member
// that does not, both nodes have one GPU, and n0, with less cpu free, is.
func TestMembersThatTolerateADrainCountItsDevices(t *testing.T) {
	for _, tc := range []struct {
		name, key, want string
	}{{"tolerant", "example.com/unhealthy", "n1"}, {"plain", "", "n0"}} {
		t.Run(tc.name, func(t *testing.T) {
			snap := draCluster(2, 2)
			snap.SetObject(gt.DeviceTaintRule("drain", "n0", "gpu-0", resourcev1.DeviceTaintEffectNoSchedule))
			snap.AddPod(gt.Pod("hog").UID("uid-hog").Node("n0").Req(corev1.ResourceCPU, "24").Obj())
			first := gt.Pod("first").UID("uid-first").DeviceClaim("gpu", "first-gpu").Obj()
			first.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "n1"}
			snap.SetObject(gt.GPUClaim("default", "first-gpu", 1))
			if plan, diag := placement.Place(snap, gang("first", 1, func(int) *corev1.Pod { return first }), placement.Options{}); plan == nil || plan.Assignments[0].Node != "n1" {
				t.Fatalf("first: plan %+v (%v), want it on n1", plan, diag)
			}
			claim := gt.GPUClaim("default", "w-gpu", 1)
			if tc.key != "" {
				claim.Spec.Devices.Requests[0].Exactly.Tolerations = []resourcev1.DeviceToleration{{Key: tc.key, Operator: resourcev1.DeviceTolerationOpExists}}
			}
			snap.SetObject(claim)
			w := gt.Pod("w").UID("uid-w").DeviceClaim("gpu", "w-gpu").Obj()
			plan, diag := placement.Place(snap, gang("w", 1, func(int) *corev1.Pod { return w }), placement.Options{})
			if plan == nil {
				t.Fatal(diag)
			}
			if got := plan.Assignments[0].Node; got != tc.want {
				t.Errorf("w on %s, want %s", got, tc.want)
			}
		})
	}
}
