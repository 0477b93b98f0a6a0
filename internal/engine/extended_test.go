package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// gpuExtendedClass returns the GPU DeviceClass naming nvidia.com/gpu as the extended
// resource it provides.
func gpuExtendedClass() *resourcev1.DeviceClass {
	class := gt.DeviceClass()
	name := gt.GPU.String()
	class.Spec.ExtendedResourceName = &name
	return class
}

// TestExtendedResourceBackedByDRA: on nodes that publish their GPUs only through DRA, a
// DeviceClass names nvidia.com/gpu as the extended resource it provides. A gang of two
// asking for 2 nvidia.com/gpu each is admitted as kube-scheduler v1.37 would place it:
// each member's plan step creates a claim for its extended resources (named after the
// member, with the plugin's request of 2 devices of the class and its container
// mapping), allocated two devices of the member's node, no device twice. A third
// member asking for 3 never fits, and its status names the resource and the class; a
// request no DeviceClass provides gets no such note.
func TestExtendedResourceBackedByDRA(t *testing.T) {
	e := draEngine()
	e.SetObject(gpuExtendedClass())
	key := "Coscheduling/default/ext"
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "ext", MinMember: 2})
	pods := map[string]*corev1.Pod{}
	for i := range 2 {
		p := gt.Pod(fmt.Sprintf("ext-%d", i)).UID(fmt.Sprintf("uid-ext-%d", i)).GPU(2).Obj()
		pods["default/"+p.Name] = p
		e.SetPod(p, key)
	}
	seen := map[string]bool{}
	for _, st := range onePlan(t, e.Step(sim.Epoch), 2) {
		p := pods[st.Pod]
		if len(st.Claims) != 1 || st.Claims[0].Extended == nil || st.Claims[0].Name != kubefit.ExtendedClaimName(p) {
			t.Fatalf("%s's claims %+v, want its extended claim", st.Pod, st.Claims)
		}
		ca := st.Claims[0]
		if r := ca.Extended.Spec.Devices.Requests; len(r) != 1 || r[0].Exactly == nil || r[0].Exactly.DeviceClassName != gt.GPUClass || r[0].Exactly.Count != 2 {
			t.Fatalf("%s's claim requests %+v, want 2 of %s", st.Pod, r, gt.GPUClass)
		}
		if m := ca.Extended.Mappings; len(m) != 1 || m[0].ResourceName != string(gt.GPU) {
			t.Fatalf("%s's mappings %+v", st.Pod, m)
		}
		for _, d := range ca.Allocation.Devices.Results {
			if d.Pool != st.Node || seen[d.Pool+"/"+d.Device] {
				t.Fatalf("%s on %s allocated %s/%s (seen %v)", st.Pod, st.Node, d.Pool, d.Device, seen)
			}
			seen[d.Pool+"/"+d.Device] = true
		}
	}
	if len(seen) != 4 {
		t.Fatalf("%d devices allocated, want 4", len(seen))
	}
	for _, tc := range []struct {
		name     string
		resource corev1.ResourceName
		note     bool
	}{
		{"3 nvidia.com/gpu, provided by the class", gt.GPU, true},
		{"another extended resource", "example.com/fpga", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(string(tc.resource), "/", "-")
			key := "Coscheduling/default/" + name
			e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1})
			e.SetPod(gt.Pod(name).Req(tc.resource, "3").Obj(), key)
			e.Step(sim.Epoch.Add(time.Second))
			st, _ := e.Group(key)
			want := string(tc.resource) + " is provided through DRA by DeviceClass " + gt.GPUClass
			if got := strings.Contains(st.Waiting, want); got != tc.note || st.Wait == nil {
				t.Fatalf("%s, waiting %q: says %q %t, want %t while it waits", st.Phase, st.Waiting, want, got, tc.note)
			}
			// Devices serve the request: a node's allocatable, which has none of it, is
			// not what the group lacks.
			short := "largest eligible node has 0"
			if said := strings.Contains(st.Waiting, short); said == tc.note {
				t.Errorf("waiting %q: says %q %t, want %t", st.Waiting, short, said, !tc.note)
			}
			// The same as data, in the status and in the record muster explain reads.
			var wantX *musterv1alpha1.ExtendedByDRA
			if tc.note {
				wantX = &musterv1alpha1.ExtendedByDRA{Resource: tc.resource, DeviceClass: gt.GPUClass}
			}
			if diff := cmp.Diff(wantX, st.ExtendedByDRA); diff != "" {
				t.Errorf("Status.ExtendedByDRA (-want +got):\n%s", diff)
			}
			if w := engine.WaitRecord(st); w == nil || !cmp.Equal(wantX, w.ExtendedByDRA) {
				t.Errorf("WaitRecord %+v, want ExtendedByDRA %+v", w, wantX)
			}
		})
	}
}

// TestExtendedByDRAFollowsTheCluster: the note that a group's extended resource is
// provided through DRA follows the DeviceClasses and the nodes: it comes when a class
// names the resource, goes when the class does not any more, and goes when a node has
// the resource in its allocatable.
func TestExtendedByDRAFollowsTheCluster(t *testing.T) {
	e := draEngine() // its class names no extended resource
	key := "Coscheduling/default/follows"
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "follows", MinMember: 1})
	e.SetPod(gt.Pod("follows-0").Req(gt.GPU, "3").Obj(), key)
	now := sim.Epoch
	noted := func(what string, want bool) {
		t.Helper()
		now = now.Add(time.Second)
		e.Step(now)
		st, _ := e.Group(key)
		if got := st.ExtendedByDRA != nil; got != want || st.Wait == nil {
			t.Fatalf("%s: ExtendedByDRA %+v (%s, waiting %q), want it noted %t while the group waits", what, st.ExtendedByDRA, st.Phase, st.Waiting, want)
		}
	}
	noted("the class names no extended resource", false)
	class := gpuExtendedClass()
	e.SetObject(class)
	noted("the class names nvidia.com/gpu", true)
	e.RemoveObject(class)
	noted("the class removed", false)
	e.SetObject(class)
	noted("the class back", true)
	e.SetNode(gt.Node("n2").GPU(1).Obj())
	noted("node n2 has 1 nvidia.com/gpu", false)
}

// TestExtendedByDRANamesTheFirstRequest: of several requests provided through DRA, a
// group's status names the first member's by key, and of its requests the first by
// name, on every read.
func TestExtendedByDRANamesTheFirstRequest(t *testing.T) {
	e := draEngine()
	e.SetObject(gpuExtendedClass())
	implicit := corev1.ResourceName(resourcev1.ResourceDeviceClassPrefix + gt.GPUClass)
	key := "Coscheduling/default/first"
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "first", MinMember: 2})
	e.SetPod(gt.Pod("first-1").Req(gt.GPU, "3").Obj(), key)
	e.SetPod(gt.Pod("first-0").Req(gt.GPU, "3").Req(implicit, "3").Obj(), key)
	e.Step(sim.Epoch)
	want := &musterv1alpha1.ExtendedByDRA{Resource: implicit, DeviceClass: gt.GPUClass}
	for range 20 {
		st, _ := e.Group(key)
		if diff := cmp.Diff(want, st.ExtendedByDRA); diff != "" {
			t.Fatalf("Status.ExtendedByDRA (-want +got):\n%s", diff)
		}
	}
}

// TestExpectedStartOfExtendedResourceByDRA: on 2 nodes of 2 DRA GPUs each, whose
// DeviceClass provides nvidia.com/gpu, a gang of 4 asking for one nvidia.com/gpu each
// runs for an hour with the claims its plan made; a queued gang of 2 asking the same is
// expected to start when it ends: the forecast counts the requests as devices of the
// class, and the devices the running gang's claims give back.
func TestExpectedStartOfExtendedResourceByDRA(t *testing.T) {
	e := draEngine()
	e.SetObject(gpuExtendedClass())
	runExtendedGang(t, e, "run", 4, "1h", sim.Epoch)
	next, _ := extendedGang(e, "next", 2, "30m")
	st := stepQueued(t, e, sim.Epoch.Add(sim.SimForecastEvery), next, "next admitted while run holds every GPU")
	if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
		t.Errorf("next: expected start %v (%q), want %v", st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
}

// extendedGang adds a gang of n members asking for one nvidia.com/gpu each, declaring
// runtime (none when empty).
func extendedGang(e *engine.Engine, name string, n int, runtime string) (string, []*corev1.Pod) {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: n})
	var pods []*corev1.Pod
	for i := range n {
		p := gt.Pod(fmt.Sprintf("%s-%d", name, i)).UID(fmt.Sprintf("uid-%s-%d", name, i)).GPU(1).Obj()
		if runtime != "" {
			p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: runtime}
		}
		e.SetPod(p, key)
		pods = append(pods, p)
	}
	return key, pods
}

// runExtendedGang admits an extendedGang at now and makes its members Running and Ready
// on their nodes, with the claims their plan steps made observed as the binder writes
// them, and the members' status naming them.
func runExtendedGang(t *testing.T, e *engine.Engine, name string, n int, runtime string, now time.Time) {
	t.Helper()
	key, pods := extendedGang(e, name, n, runtime)
	out := e.Step(now)
	if len(out.Plans) != 1 || len(out.Plans[0].Steps) != n {
		t.Fatalf("plans %+v, want one of %d members", out.Plans, n)
	}
	for _, st := range out.Plans[0].Steps {
		i := slices.IndexFunc(pods, func(p *corev1.Pod) bool { return "default/"+p.Name == st.Pod })
		running := pods[i].DeepCopy()
		running.Spec.NodeName = st.Node
		running.Status.Phase = corev1.PodRunning
		running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if len(st.Claims) > 0 { // none on a node with the resource in its allocatable
			ca := st.Claims[0]
			running.Status.ExtendedResourceClaimStatus = kubefit.ExtendedStatus(ca)
			claim := kubefit.ExtendedClaimObject(running, ca)
			claim.UID, claim.Status = types.UID("claim-"+running.Name), kubefit.ExtendedReservation(running, ca)
			e.SetObject(claim)
		}
		e.SetPod(running, key)
	}
	e.Step(now)
}

// TestExpectedStartOfExtendedResourceOnMixedNodes: while a cluster moves from the
// device plugin to DRA, one node has nvidia.com/gpu in its allocatable and two publish
// their GPUs through DRA, which a DeviceClass names nvidia.com/gpu for. A gang of 6
// holds every GPU for an hour; a gang of 5 behind it needs the GPUs of both kinds of
// node, and is expected to start when the first gang ends.
func TestExpectedStartOfExtendedResourceOnMixedNodes(t *testing.T) {
	e := draEngine()
	e.SetObject(gpuExtendedClass())
	e.SetNode(gt.Node("p0").GPU(2).Obj())
	runExtendedGang(t, e, "run", 6, "1h", sim.Epoch)
	next, _ := extendedGang(e, "next", 5, "30m")
	st := stepQueued(t, e, sim.Epoch.Add(sim.SimForecastEvery), next, "next admitted while run holds every GPU")
	if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
		t.Errorf("next: expected start %v (%q), want %v", st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
}

// TestQuotaOfExtendedResourceCountsClaims: a DeviceClass names nvidia.com/gpu as the
// extended resource it provides, and a queue's quota of 3 nvidia.com/gpu was written for
// the device plugin. Claims of the class's devices charge nvidia.com/gpu too, as
// Kubernetes' ResourceQuota counts them: a gang of two one-device claims is admitted, a
// second one waits QuotaExceeded on a cluster with room for both.
func TestQuotaOfExtendedResourceCountsClaims(t *testing.T) {
	e := draEngine()
	e.SetObject(gpuExtendedClass())
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default", Quota: cluster.Resources{gt.GPU: 3}}})
	draGroup(e, "a", 2)
	if out := e.Step(sim.Epoch); len(out.Plans) != 1 {
		t.Fatalf("a: plans %+v", out.Plans)
	}
	b, _ := draGroup(e, "b", 2)
	st := stepQueued(t, e, sim.Epoch.Add(time.Second), b, "b admitted past the quota of nvidia.com/gpu")
	if st.Wait == nil || st.Wait.Kind != queue.QuotaExceeded || !strings.Contains(st.Waiting, string(gt.GPU)) {
		t.Fatalf("b waits for %+v (%q), want %s naming %s", st.Wait, st.Waiting, queue.QuotaExceeded, gt.GPU)
	}
}

// TestQuotaOfDeviceClassCountsExtendedResources: on nodes that publish their GPUs only
// through DRA, a queue's quota of 3 devices of the GPU class holds for pods asking for
// the nvidia.com/gpu the class provides: a gang of two is admitted and runs, and a
// second one waits QuotaExceeded on a cluster with room for both.
func TestQuotaOfDeviceClassCountsExtendedResources(t *testing.T) {
	e := draEngine()
	e.SetObject(gpuExtendedClass())
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default", Quota: cluster.Resources{gt.GPUClass: 3}}})
	runExtendedGang(t, e, "a", 2, "", sim.Epoch)
	b, _ := extendedGang(e, "b", 2, "")
	st := stepQueued(t, e, sim.Epoch.Add(time.Second), b, "b admitted past the quota of "+gt.GPUClass)
	if st.Wait == nil || st.Wait.Kind != queue.QuotaExceeded || !strings.Contains(st.Waiting, gt.GPUClass) {
		t.Fatalf("b waits for %+v (%q), want %s naming %s", st.Wait, st.Waiting, queue.QuotaExceeded, gt.GPUClass)
	}
}
