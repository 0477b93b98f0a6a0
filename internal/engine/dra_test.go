package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// draEngine is an engine over 2 nodes with 2 DRA GPUs each.
func draEngine() *engine.Engine {
	e := sim.NewEngine()
	for _, n := range []string{"n0", "n1"} {
		e.SetNode(gt.Node(n).Obj())
		e.SetObject(gt.GPUSlice(n, 2, "clique-a"))
	}
	e.SetObject(gt.DeviceClass())
	return e
}

// draGroup adds a group of n workers, each with its own one-GPU claim, whose request has
// the CEL selectors given.
func draGroup(e *engine.Engine, name string, n int, selectors ...string) (string, []*corev1.Pod) {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: n})
	var pods []*corev1.Pod
	for i := range n {
		pod := fmt.Sprintf("%s-%d", name, i)
		e.SetObject(gt.GPUClaim("default", pod+"-gpu", 1, selectors...))
		p := gt.Pod(pod).UID("uid-"+pod).DeviceClaim("gpu", pod+"-gpu").Obj()
		e.SetPod(p, key)
		pods = append(pods, p)
	}
	return key, pods
}

// onePlan returns the steps of out's only plan, failing unless there is one plan, of n
// steps, each of which writes the allocation of the member's claims.
func onePlan(t testing.TB, out engine.Output, n int) []engine.Step {
	t.Helper()
	if len(out.Plans) != 1 || len(out.Plans[0].Steps) != n {
		t.Fatalf("plans %+v, want one of %d members", out.Plans, n)
	}
	for _, st := range out.Plans[0].Steps {
		if len(st.Claims) == 0 || !slices.ContainsFunc(st.Claims, func(c kubefit.ClaimAllocation) bool { return c.Allocation != nil }) {
			t.Fatalf("step %+v allocates no claim", st)
		}
	}
	return out.Plans[0].Steps
}

// TestPlanAllocatesClaims: a gang's plan carries each member's claim allocation, the
// devices stay taken for the next group while the binds are in flight, a failed bind
// gives its member's device back (and its replacement takes one), and once the gang's pods and allocations are gone the
// next group is admitted.
func TestPlanAllocatesClaims(t *testing.T) {
	e := draEngine()
	now := sim.Epoch
	_, pods := draGroup(e, "a", 3)
	out := e.Step(now)
	for _, st := range onePlan(t, out, 3) {
		if len(st.Claims) != 1 {
			t.Fatalf("step %+v writes %d claims, want its own", st, len(st.Claims))
		}
	}
	// Three GPUs asked, one left: the second group waits while a's binds are in flight.
	draGroup(e, "b", 3)
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 0 {
		t.Fatalf("b admitted on devices a holds: %+v", out.Plans)
	}
	// One of a's binds fails: its claim is shown unallocated again and a places it anew.
	failed := out.Plans[0].Steps[2]
	e.BindFailed(failed.Pod)
	if c := e.Snapshot().ResourceClaim("default/a-2-gpu"); c.Status.Allocation != nil {
		t.Fatalf("failed bind kept its claim allocated: %+v", c.Status)
	}
	now = now.Add(time.Second)
	re := e.Step(now)
	if len(re.Plans) != 1 || re.Plans[0].Group != "Coscheduling/default/a" || len(re.Plans[0].Steps[0].Claims) != 1 {
		t.Fatalf("replacement plans %+v", re.Plans)
	}
	// a ends: its pods are deleted and the resourceclaim controller deallocates.
	for _, p := range pods {
		e.RemovePod("default/" + p.Name)
		e.SetObject(gt.GPUClaim("default", p.Name+"-gpu", 1))
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 1 || out.Plans[0].Group != "Coscheduling/default/b" {
		t.Fatalf("after a ended: plans %+v", out.Plans)
	}
}

// TestQuotaByDeviceClass: a queue's quota of 3 gpu.nvidia.com devices admits a gang of 2
// one-device claims and holds back a second one (QuotaExceeded) on a cluster with room
// for both; when the first gang's pods are gone the second is admitted.
func TestQuotaByDeviceClass(t *testing.T) {
	e := draEngine()
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default", Quota: cluster.Resources{gt.GPUClass: 3}}})
	now := sim.Epoch
	_, pods := draGroup(e, "a", 2)
	if out := e.Step(now); len(out.Plans) != 1 {
		t.Fatalf("a: plans %+v", out.Plans)
	}
	b, _ := draGroup(e, "b", 2)
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 0 {
		t.Fatalf("b admitted past the device quota: %+v", out.Plans)
	}
	st, _ := e.Group(b)
	if st.Wait == nil || st.Wait.Kind != queue.QuotaExceeded {
		t.Fatalf("b waits for %+v, want %s", st.Wait, queue.QuotaExceeded)
	}
	for _, p := range pods {
		e.RemovePod("default/" + p.Name)
		e.SetObject(gt.GPUClaim("default", p.Name+"-gpu", 1))
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 1 || out.Plans[0].Group != b {
		t.Fatalf("after a ended: plans %+v", out.Plans)
	}
}

// TestPodGroupClaim: a native PodGroup's claim of one NVLink channel, published for the
// nodes of clique-b only, is allocated once for the group and reserved for the PodGroup;
// every member lands on a node that reaches it.
func TestPodGroupClaim(t *testing.T) {
	e := sim.NewEngine()
	for i, clique := range []string{"clique-a", "clique-a", "clique-b", "clique-b"} {
		n := fmt.Sprintf("n%d", i)
		e.SetNode(gt.Node(n).Label("clique", clique).Obj())
		e.SetObject(gt.GPUSlice(n, 2, clique))
	}
	e.SetObject(gt.DeviceClass())
	channelType := "imex-channel"
	channels := gt.GPUSlice("channels", 1, "clique-b")
	channels.Spec.NodeName = nil
	channels.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "clique", Operator: corev1.NodeSelectorOpIn, Values: []string{"clique-b"}}}}}}
	channels.Spec.Devices[0].Attributes["type"] = resourcev1.DeviceAttribute{StringValue: &channelType}
	e.SetObject(channels)
	e.SetObject(gt.GPUClaim("default", "channel", 1,
		`"type" in device.attributes["gpu.nvidia.com"] && device.attributes["gpu.nvidia.com"].type == "imex-channel"`))
	channelName := "channel"
	key := "Native/default/vit"
	consumer := &resourcev1.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "vit", UID: "uid-vit"}
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Native, Namespace: "default", Name: "vit", MinMember: 3,
		GroupClaims:   []schedulingv1beta1.PodGroupResourceClaim{{Name: "channel", ResourceClaimName: &channelName}},
		ClaimConsumer: consumer})
	for i := range 3 {
		name := fmt.Sprintf("vit-%d", i)
		e.SetObject(gt.GPUClaim("default", name+"-gpu", 1))
		e.SetPod(gt.Pod(name).UID("uid-"+name).DeviceClaim("channel", "channel").DeviceClaim("gpu", name+"-gpu").Obj(), key)
	}
	out := e.Step(sim.Epoch)
	if len(out.Plans) != 1 || len(out.Plans[0].Steps) != 3 {
		t.Fatalf("plans %+v", out.Plans)
	}
	for i, st := range out.Plans[0].Steps {
		if st.Node != "n2" && st.Node != "n3" {
			t.Errorf("%s on %s, outside clique-b", st.Pod, st.Node)
		}
		ch := st.Claims[0]
		if ch.Name != "channel" || ch.Consumer == nil || *ch.Consumer != *consumer || (i == 0) != (ch.Allocation != nil) {
			t.Errorf("%s: channel claim %+v, want it reserved for the PodGroup and allocated by the first member", st.Pod, ch)
		}
		if r := st.Claims[0].Allocation; i == 0 && (r == nil || r.Devices.Results[0].Pool != "channels") {
			t.Errorf("%s: channel allocated %+v, want the channel device", st.Pod, r)
		}
		if st.Claims[1].Consumer != nil {
			t.Errorf("%s: its own claim is reserved for %+v", st.Pod, st.Claims[1].Consumer)
		}
	}
	if got := e.Snapshot().ResourceClaim("default/channel").Status.ReservedFor; len(got) != 1 || got[0] != *consumer {
		t.Fatalf("channel reserved for %+v, want the PodGroup once", got)
	}
	// No member becomes Ready: at the start timeout the group is evicted, and its own
	// claim is released with it.
	for _, st := range out.Plans[0].Steps {
		e.SetPod(gt.Pod(st.Pod[len("default/"):]).UID("uid-"+st.Pod[len("default/"):]).Node(st.Node).Obj(), key)
	}
	e.Step(sim.Epoch.Add(time.Second))
	out = e.Step(sim.Epoch.Add(2 * time.Hour))
	if len(out.Evictions) != 3 || len(out.ClaimReleases) != 1 || out.ClaimReleases[0].Claim != "channel" || out.ClaimReleases[0].Consumer != *consumer {
		t.Fatalf("evictions %+v, claim releases %+v", out.Evictions, out.ClaimReleases)
	}
}

// runDRAGang admits a group of n one-GPU claims (with the CEL selectors given) at now,
// allocates its claims and makes its members Running and Ready on the nodes planned,
// declaring runtime unless it is "".
func runDRAGang(t *testing.T, e *engine.Engine, name string, n int, runtime string, now time.Time, selectors ...string) {
	t.Helper()
	key, pods := draGroup(e, name, n, selectors...)
	runPlanned(t, e, key, pods, runtime, now)
}

// runPlanned steps e at now, which must admit group key of pods with one plan, writes
// the allocations of each member's claim (named after the pod, with "-gpu") and makes
// the members Running and Ready on the nodes planned, declaring runtime unless it is "".
func runPlanned(t testing.TB, e *engine.Engine, key string, pods []*corev1.Pod, runtime string, now time.Time) {
	t.Helper()
	for _, st := range onePlan(t, e.Step(now), len(pods)) {
		i := slices.IndexFunc(pods, func(p *corev1.Pod) bool { return "default/"+p.Name == st.Pod })
		running := pods[i].DeepCopy()
		running.Spec.NodeName = st.Node
		running.Status.Phase = corev1.PodRunning
		running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if runtime != "" {
			running.Annotations = map[string]string{engine.AnnotationExpectedRuntime: runtime}
		}
		for _, ca := range st.Claims {
			claim, err := kubefit.Allocated(e.Snapshot().ResourceClaim("default/"+running.Name+"-gpu"), running, ca)
			if err != nil {
				t.Fatal(err)
			}
			e.SetObject(claim)
		}
		e.SetPod(running, key)
	}
	e.Step(now)
}

// TestExpectedStartOfDeviceClaims: on 2 nodes of 2 DRA GPUs each, a gang of 4 one-GPU
// claims runs; a queued gang of 2 one-GPU claims is expected to start when it ends (in
// an hour), not now: the forecast counts each node's devices of the class and those
// allocated, and the devices a member's own claims give back when it ends. When the
// running gang declares no run time, the queued one's start is unknown, naming the
// class.
func TestExpectedStartOfDeviceClaims(t *testing.T) {
	for _, runtime := range []string{"1h", ""} {
		t.Run("runtime="+runtime, func(t *testing.T) {
			e := draEngine()
			now := sim.Epoch
			runDRAGang(t, e, "run", 4, runtime, now)
			next, nextPods := draGroup(e, "next", 2)
			for _, p := range nextPods {
				p = p.DeepCopy()
				p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "30m"}
				e.SetPod(p, next)
			}
			now = now.Add(sim.SimForecastEvery)
			st := stepQueued(t, e, now, next, "next admitted while run holds every GPU")
			if runtime == "" {
				if !st.ExpectedStart.IsZero() || !strings.Contains(st.ExpectedStartUnknown, "of the 2 "+gt.GPUClass+" its members ask for") {
					t.Errorf("next: expected start %v (%q), want unknown, naming 2 of class %s", st.ExpectedStart, st.ExpectedStartUnknown, gt.GPUClass)
				}
				return
			}
			if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
				t.Errorf("next: expected start %v (%q), want %v", st.ExpectedStart, st.ExpectedStartUnknown, want)
			}
		})
	}
}

// TestExpectedStartOfAllDevices: on 2 nodes of 2 DRA GPUs each, a gang of 3 one-GPU
// claims runs for an hour and leaves one GPU free; a queued pod that asks for all the
// GPUs of its node needs both of a node's, and is expected to start when the gang ends,
// not at once on the free one.
func TestExpectedStartOfAllDevices(t *testing.T) {
	e, key := behindAGang(t, 3, "whole", 1)
	now := sim.Epoch
	claim := gt.GPUClaim("default", "whole-gpus", 0)
	claim.Spec.Devices.Requests[0].Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	e.SetObject(claim)
	e.SetPod(gt.Pod("whole").UID("uid-whole").DeviceClaim("gpu", "whole-gpus").Obj(), key)
	now = now.Add(sim.SimForecastEvery)
	st := stepQueued(t, e, now, key, "whole admitted while no node has all its GPUs free")
	if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
		t.Errorf("whole: expected start %v (%q), want %v, when the gang gives its GPUs back", st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
}

// TestExpectedStartOfClaimsNotMadeYet: on 2 nodes of 2 DRA GPUs each, a gang of 4
// one-GPU claims runs for an hour. A queued pod refers to a ResourceClaim not created
// yet (as a template's claim is, until the resourceclaim controller makes it): its
// start is unknown, naming the claim, not now, as it would be planned without the
// devices it asks for. Once the claim exists, it is expected to start in an hour.
func TestExpectedStartOfClaimsNotMadeYet(t *testing.T) {
	e, key := behindAGang(t, 4, "late", 1)
	now := sim.Epoch
	pod := gt.Pod("late").UID("uid-late").DeviceClaim("gpu", "late-gpu").Obj()
	pod.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "30m"}
	e.SetPod(pod, key)
	now = now.Add(sim.SimForecastEvery)
	st := stepQueued(t, e, now, key, "late admitted without its claim")
	if !st.ExpectedStart.IsZero() || !strings.Contains(st.ExpectedStartUnknown, "pod late's ResourceClaim gpu is not created yet") {
		t.Errorf("late, its claim not created: expected start %v (%q), want unknown, naming the claim", st.ExpectedStart, st.ExpectedStartUnknown)
	}

	e.SetObject(gt.GPUClaim("default", "late-gpu", 1))
	now = now.Add(sim.SimForecastEvery)
	st = stepQueued(t, e, now, key, "late admitted while run holds every GPU")
	if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
		t.Errorf("late, its claim created: expected start %v (%q), want %v", st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
}

// TestExpectedStartOfSelectedDevices: the DeviceClass covers the GPUs of both NVLink
// cliques, and the claims select clique-b's; a gang runs for an hour on n1, clique-b's
// only node then. A queued member that selects clique-b too is expected to start when
// the gang ends, not at once on n0's GPUs, which its claim does not select; also when
// its claim comes after it. With a node selector that admits n0 and n1, it is not
// expected to start on n2 either, which then joins clique-b outside that pool.
func TestExpectedStartOfSelectedDevices(t *testing.T) {
	for _, pool := range []bool{false, true} {
		t.Run(fmt.Sprintf("pool=%t", pool), func(t *testing.T) {
			e := sim.NewEngine()
			for n, clique := range map[string]string{"n0": "clique-a", "n1": "clique-b"} {
				e.SetNode(gt.Node(n).Label("pool", "p").Obj())
				e.SetObject(gt.GPUSlice(n, 2, clique))
			}
			e.SetObject(gt.DeviceClass())
			const inB = `device.attributes["gpu.nvidia.com"].cliqueID == "clique-b"`
			now := sim.Epoch
			runDRAGang(t, e, "run", 2, "1h", now, inB)
			member := gt.Pod("next-0").UID("uid-next-0").DeviceClaim("gpu", "next-0-gpu")
			if pool {
				e.SetNode(gt.Node("n2").Label("pool", "q").Obj())
				e.SetObject(gt.GPUSlice("n2", 2, "clique-b"))
				member = member.Selector("pool", "p")
			}
			// The member comes before its claim, as a claim made from a template does:
			// its nodes are read again when the claim comes.
			next := "Coscheduling/default/next"
			e.SetGroup(engine.GroupSpec{Key: next, Source: engine.Coscheduling, Namespace: "default", Name: "next", MinMember: 1})
			e.SetPod(member.Obj(), next)
			for range 2 {
				now = now.Add(sim.SimForecastEvery)
				if out := e.Step(now); len(out.Plans) != 0 {
					t.Fatalf("next admitted while n1's GPUs are taken: %+v", out.Plans)
				}
				e.SetObject(gt.GPUClaim("default", "next-0-gpu", 1, inB))
			}
			st, _ := e.Group(next)
			if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
				t.Errorf("next: expected start %v (%q), want %v, when the gang gives n1's GPUs back", st.ExpectedStart, st.ExpectedStartUnknown, want)
			}
		})
	}
}

// TestPlanAllocatesFirstAvailable: a claim whose request lists alternatives in order of
// preference (firstAvailable), a B200 first and any GPU of the class second, on nodes of
// H100s only, is allocated its second alternative, as kube-scheduler's allocator does: the
// gang is admitted, each result naming the subrequest it took.
func TestPlanAllocatesFirstAvailable(t *testing.T) {
	e := draEngine()
	b200 := resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].productName == "NVIDIA B200"`}}
	preferGroup(e, "prefer", "", oneOf("b200", 1, b200), oneOf("any", 1))
	for _, st := range onePlan(t, e.Step(sim.Epoch), 2) {
		results := st.Claims[0].Allocation.Devices.Results
		if len(results) != 1 || results[0].Request != "gpu/any" {
			t.Errorf("%s: allocation results %+v, want one device for subrequest gpu/any", st.Pod, results)
		}
	}
}

// TestExpectedStartOfFirstAvailable: on 2 nodes of 2 DRA GPUs each, one gang holds 2
// GPUs for an hour and another 1 GPU for three. A queued gang of 2 members whose claims
// prefer 2 GPUs and take 1 otherwise (firstAvailable) is expected to start in an hour
// with its second alternative, when 3 GPUs are free, not in three hours, when its first
// fits.
func TestExpectedStartOfFirstAvailable(t *testing.T) {
	e := draEngine()
	now := sim.Epoch
	runDRAGang(t, e, "hour", 2, "1h", now)
	runDRAGang(t, e, "three", 1, "3h", now)
	key := preferGroup(e, "prefer", "30m", oneOf("two", 2), oneOf("one", 1))
	now = now.Add(sim.SimForecastEvery)
	st := stepQueued(t, e, now, key, "prefer admitted with one GPU free")
	if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
		t.Errorf("prefer: expected start %v (%q), want %v, with one GPU a member", st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
}

// oneOf is an alternative of a firstAvailable request: count devices of the GPU class
// with the selectors given.
func oneOf(name string, count int64, selectors ...resourcev1.DeviceSelector) resourcev1.DeviceSubRequest {
	return resourcev1.DeviceSubRequest{Name: name, DeviceClassName: gt.GPUClass,
		AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count, Selectors: selectors}
}

// preferGroup adds a group of 2 members, each with its own claim of one request "gpu"
// with the alternatives given, declaring runtime unless it is "", and returns its key.
func preferGroup(e *engine.Engine, name, runtime string, alternatives ...resourcev1.DeviceSubRequest) string {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 2})
	for i := range 2 {
		pod := fmt.Sprintf("%s-%d", name, i)
		c := gt.GPUClaim("default", pod+"-gpu", 1)
		c.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", FirstAvailable: alternatives}}
		e.SetObject(c)
		p := gt.Pod(pod).UID("uid-"+pod).DeviceClaim("gpu", pod+"-gpu").Obj()
		if runtime != "" {
			p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: runtime}
		}
		e.SetPod(p, key)
	}
	return key
}

// TestDeviceTaintRuleWaits: a DeviceTaintRule that drains n0's two GPUs leaves a gang of
// three one-GPU claims waiting, Queued with the plugin's reason rather than Impossible
// (an empty, healthy cluster has the devices); once the rule is removed it is admitted.
func TestDeviceTaintRuleWaits(t *testing.T) {
	e := draEngine()
	rule := gt.DeviceTaintRule("drain", "n0", "", resourcev1.DeviceTaintEffectNoSchedule)
	rule.Spec.DeviceSelector.Device = nil
	e.SetObject(rule)
	key, _ := draGroup(e, "a", 3)
	now := sim.Epoch
	if out := e.Step(now); len(out.Plans) != 0 {
		t.Fatalf("admitted on tainted devices: %+v", out.Plans)
	}
	st, _ := e.Group(key)
	if st.Phase != "Queued" || !strings.Contains(st.Waiting, "cannot allocate all claims") {
		t.Fatalf("with n0's devices tainted: %s, waiting %q; want Queued with the plugin's reason", st.Phase, st.Waiting)
	}
	e.RemoveObject(rule)
	now = now.Add(time.Second)
	onePlan(t, e.Step(now), 3)
}

// TestExpectedStartOfALaterMembersClaim: a group stepped while its one member has no
// claims, then joined by a member whose claim is not created yet, has no expected start,
// naming the new member's claim: what the members ask for is read again when they change.
func TestExpectedStartOfALaterMembersClaim(t *testing.T) {
	e, key := behindAGang(t, 4, "late", 2)
	now := sim.Epoch
	plain := gt.Pod("late-0").UID("uid-late-0").Obj()
	plain.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "30m"}
	e.SetPod(plain, key)
	now = now.Add(sim.SimForecastEvery)
	stepQueued(t, e, now, key, "late admitted with one of its two members")
	claiming := gt.Pod("late-1").UID("uid-late-1").DeviceClaim("gpu", "late-1-gpu").Obj()
	claiming.Annotations = plain.Annotations
	e.SetPod(claiming, key)
	now = now.Add(sim.SimForecastEvery)
	st := stepQueued(t, e, now, key, "late admitted without its claim")
	if !st.ExpectedStart.IsZero() || !strings.Contains(st.ExpectedStartUnknown, "pod late-1's ResourceClaim gpu is not created yet") {
		t.Errorf("late, late-1's claim not created: expected start %v (%q), want unknown, naming the claim", st.ExpectedStart, st.ExpectedStartUnknown)
	}
}

// behindAGang returns a DRA engine whose gang "run" of n one-GPU members was admitted at
// sim.Epoch for an hour, and the key of group name, of minMember, made with no members.
func behindAGang(t *testing.T, n int, name string, minMember int) (*engine.Engine, string) {
	t.Helper()
	e := draEngine()
	runDRAGang(t, e, "run", n, "1h", sim.Epoch)
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: minMember})
	return e, key
}

// stepQueued steps e at now, fails the test if the step admitted a group (why names the
// group and why it must not be), and returns the status of group key.
func stepQueued(t *testing.T, e *engine.Engine, now time.Time, key, why string) engine.Status {
	t.Helper()
	if out := e.Step(now); len(out.Plans) != 0 {
		t.Fatalf("%s: %+v", why, out.Plans)
	}
	st, _ := e.Group(key)
	return st
}
