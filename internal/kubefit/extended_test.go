package kubefit_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// TestExtendedResourceAllocated: the GPU DeviceClass names example.com/gpu as the
// extended resource its devices provide, and no node has it. kube-scheduler's
// DynamicResources plugin allocates two of n0's GPUs to a pod asking for two; the claim
// is muster's name for the pod, with the plugin's request and container mappings.
// Assumed, the claim takes the devices: a second pod asking for one finds n0 full and
// n1 free; undone, n0 takes it again.
func TestExtendedResourceAllocated(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const res = corev1.ResourceName("example.com/gpu")
	snap := cluster.New([]*corev1.Node{gt.Node("n0").Obj(), gt.Node("n1").Obj()}, nil)
	class := gt.DeviceClass()
	class.Spec.ExtendedResourceName = ptr.To(string(res))
	snap.SetObject(class)
	snap.SetObject(gt.GPUSlice("n0", 2, "clique-a"))
	snap.SetObject(gt.GPUSlice("n1", 2, "clique-a"))
	asking := func(name string, n string) *corev1.Pod {
		p := gt.Pod(name).UID("uid-" + name).Obj()
		p.Spec.Containers[0].Resources.Requests[res] = resource.MustParse(n)
		p.Spec.Containers[0].Resources.Limits[res] = resource.MustParse(n)
		return p
	}
	classes, err := h.ExtendedClasses(snap, cluster.Resources{res: 2, corev1.ResourceCPU: 1000})
	if err != nil || len(classes) != 1 || classes[res] != gt.GPUClass {
		t.Fatalf("ExtendedClasses: %v, %v; want %s by %s", classes, err, res, gt.GPUClass)
	}
	w0, w1 := asking("w0", "2"), asking("w1", "1")
	n0 := snap.Node("n0")
	c, err := h.Begin(snap, w0)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Filter(n0); !v.OK() {
		t.Fatalf("w0 on n0: %+v", v)
	}
	claims, err := c.Reserve(w0, n0)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Extended == nil || claims[0].Allocation == nil {
		t.Fatalf("w0's claims: %+v; want one extended claim, allocated", claims)
	}
	ca := claims[0]
	if ca.Name != kubefit.ExtendedClaimName(w0) || len(ca.Allocation.Devices.Results) != 2 {
		t.Fatalf("w0's claim %s with %d devices; want %s with 2", ca.Name, len(ca.Allocation.Devices.Results), kubefit.ExtendedClaimName(w0))
	}
	reqs := ca.Extended.Spec.Devices.Requests
	if len(reqs) != 1 || reqs[0].Exactly == nil || reqs[0].Exactly.DeviceClassName != gt.GPUClass || reqs[0].Exactly.Count != 2 {
		t.Fatalf("w0's claim requests %+v; want 2 of class %s", reqs, gt.GPUClass)
	}
	if m := ca.Extended.Mappings; len(m) != 1 || m[0].ContainerName != "main" || m[0].ResourceName != string(res) || m[0].RequestName != reqs[0].Name {
		t.Fatalf("w0's mappings %+v", m)
	}
	undo, err := kubefit.Assume(snap, w0, claims)
	if err != nil {
		t.Fatal(err)
	}
	got := snap.ResourceClaim("default/" + ca.Name)
	if got == nil || got.Status.Allocation == nil || got.Annotations["resource.kubernetes.io/extended-resource-claim"] != "true" || len(got.Status.ReservedFor) != 1 {
		t.Fatalf("assumed claim: %+v", got)
	}
	c, err = h.Begin(snap, w1)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Filter(n0); v.OK() {
		t.Fatal("w1 fits n0 with both of its GPUs assumed allocated to w0")
	}
	if v := c.Filter(snap.Node("n1")); !v.OK() {
		t.Fatalf("w1 on n1: %+v", v)
	}
	undo()
	if c, _ = h.Begin(snap, w1); !c.Filter(n0).OK() {
		t.Fatalf("after the undo, w1 on n0: %+v", c.Filter(n0))
	}
}

// TestExtendedResourcesTakeTheNewerClass: two DeviceClasses name example.com/gpu; as in
// kube-scheduler, the newer provides it (a migration from one class to another), and
// each class provides its implicit name.
func TestExtendedResourcesTakeTheNewerClass(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := cluster.New([]*corev1.Node{gt.Node("n0").Obj()}, nil)
	for i, name := range []string{"b-new", "a-old"} {
		c := gt.DeviceClass()
		c.Name, c.Spec.ExtendedResourceName = name, ptr.To("example.com/gpu")
		c.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2-i, 0, 0, 0, 0, time.UTC))
		snap.SetObject(c)
	}
	got, err := h.ExtendedResources(snap)
	if err != nil {
		t.Fatal(err)
	}
	want := map[corev1.ResourceName]string{
		"example.com/gpu":                          "b-new",
		"deviceclass.resource.kubernetes.io/a-old": "a-old",
		"deviceclass.resource.kubernetes.io/b-new": "b-new",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ExtendedResources (-want +got):\n%s", diff)
	}
}
