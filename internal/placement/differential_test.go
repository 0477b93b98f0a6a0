package placement_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/placement"
)

// world is a small random cluster: nodes in two zones with taints and labels, bound pods
// with labels, affinity, host ports and volumes, and the volume objects they use.
type world struct {
	nodes []*corev1.Node
	pods  []*corev1.Pod
	objs  *cluster.Objects
}

var (
	apps   = []string{"a", "b", "c"}
	topos  = []string{corev1.LabelHostname, corev1.LabelTopologyZone}
	ports  = []int32{0, 0, 29500, 8080}
	claims = []string{"", "", "data-z0", "data-z1", "scratch", "missing"}
)

// drawPod draws a pod's scheduling constraints; name and node are the caller's.
func drawPod(t *rapid.T, name string) *corev1.Pod {
	b := gt.Pod(name).Req(corev1.ResourceCPU, fmt.Sprint(rapid.IntRange(1, 4).Draw(t, "cpu")))
	if g := rapid.IntRange(0, 2).Draw(t, "gpu"); g > 0 {
		b = b.GPU(int64(g))
	}
	app := rapid.SampledFrom(apps).Draw(t, "app")
	b = b.Label("app", app)
	for range rapid.IntRange(0, 2).Draw(t, "terms") {
		other := rapid.SampledFrom(apps).Draw(t, "termApp")
		key := rapid.SampledFrom(topos).Draw(t, "termTopology")
		if rapid.Bool().Draw(t, "anti") {
			b = b.AntiAffinity("app", other, key)
		} else {
			b = b.PodAffinity("app", other, key)
		}
	}
	if rapid.IntRange(0, 3).Draw(t, "spread") == 0 {
		b = b.Spread(int32(rapid.IntRange(1, 2).Draw(t, "skew")), rapid.SampledFrom(topos).Draw(t, "spreadKey"), "app", app)
	}
	if port := rapid.SampledFrom(ports).Draw(t, "port"); port > 0 {
		b = b.HostPort(port)
	}
	if c := rapid.SampledFrom(claims).Draw(t, "claim"); c != "" {
		b = b.Claim(c)
	}
	if rapid.IntRange(0, 3).Draw(t, "selector") == 0 {
		b = b.Selector(corev1.LabelTopologyZone, rapid.SampledFrom([]string{"z0", "z1"}).Draw(t, "zone"))
	}
	if rapid.Bool().Draw(t, "tolerates") {
		b = b.Tolerate("dedicated", "ml", corev1.TaintEffectNoSchedule)
	}
	p := b.Obj()
	p.UID = types.UID("uid-" + name)
	return p
}

func drawWorld(t *rapid.T) world {
	w := world{objs: volumeObjects()}
	for i := range rapid.IntRange(1, 5).Draw(t, "nodes") {
		b := gt.Node(fmt.Sprintf("n-%d", i)).GPU(int64(rapid.IntRange(0, 4).Draw(t, "nodeGPU"))).CPU("8").
			Label(corev1.LabelTopologyZone, fmt.Sprintf("z%d", i%2))
		if rapid.IntRange(0, 4).Draw(t, "tainted") == 0 {
			b = b.Taint("dedicated", "ml", corev1.TaintEffectNoSchedule)
		}
		w.nodes = append(w.nodes, b.Obj())
	}
	for i := range rapid.IntRange(0, 6).Draw(t, "bound") {
		p := drawPod(t, fmt.Sprintf("bound-%d", i))
		p.Spec.NodeName = rapid.SampledFrom(w.nodes).Draw(t, "on").Name
		w.pods = append(w.pods, p)
	}
	return w
}

// volumeObjects are claims bound to zonal volumes, a claim of a WaitForFirstConsumer class
// not provisioned yet, and a class with its CSI driver.
func volumeObjects() *cluster.Objects {
	snap := cluster.New(nil, nil)
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	snap.SetObject(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"},
		Provisioner: "sandbox.muster.dev/local", VolumeBindingMode: &wffc})
	for _, z := range []string{"z0", "z1"} {
		snap.SetObject(&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + z},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				ClaimRef:    &corev1.ObjectReference{Namespace: "default", Name: "data-" + z},
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					CSI: &corev1.CSIPersistentVolumeSource{Driver: "sandbox.muster.dev/local", VolumeHandle: "pv-" + z}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}},
				}}}},
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
		})
		snap.SetObject(&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-" + z,
				Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + z,
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		})
	}
	class := "local"
	snap.SetObject(&corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "scratch"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	})
	snap.SetObject(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "sandbox.muster.dev/local"}})
	return snap.Objects()
}

func (w world) snapshot(h *kubefit.Host) *cluster.Snapshot {
	s := cluster.New(w.nodes, w.pods)
	*s.Objects() = *w.objs
	kubefit.Use(s, h)
	return s
}

// TestFeasibilityMatchesUpstream: for random pods on random nodes with bound pods,
// placement's verdict for one member on each node (FitsOn, Place's own predicates and the
// hosted filters) is kube-scheduler's Filter verdict on the same state.
func TestFeasibilityMatchesUpstream(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		pod := drawPod(t, "member")
		snap := w.snapshot(h)
		up, err := h.Upstream(w.nodes, w.pods, w.objs, pod)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range w.nodes {
			reason, ok := placement.FitsOn(snap, n.Name, placement.Member{Name: "default/member", Pod: pod})
			if ok != up[n.Name].OK() {
				t.Fatalf("node %s: muster says fits=%v (%v), kube-scheduler says %+v", n.Name, ok, reason, up[n.Name])
			}
		}
	})
}

// TestPlansPassUpstreamInOrder: a group's plan, replayed member by member in plan order
// with the members before bound, passes kube-scheduler's filters at every step.
func TestPlansPassUpstreamInOrder(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		template := drawPod(t, "member")
		g := placement.Group{Name: "g", MinMember: rapid.IntRange(1, 4).Draw(t, "min")}
		for i := range g.MinMember + rapid.IntRange(0, 1).Draw(t, "extra") {
			p := template.DeepCopy()
			p.Name, p.UID = fmt.Sprintf("m-%d", i), types.UID(fmt.Sprintf("uid-m-%d", i))
			g.Members = append(g.Members, placement.Member{Name: "default/" + p.Name, Pod: p})
		}
		plan, _ := placement.Place(w.snapshot(h), g, placement.Options{})
		if plan == nil {
			return
		}
		pods := append([]*corev1.Pod(nil), w.pods...)
		byName := map[string]*corev1.Pod{}
		for _, m := range g.Members {
			byName[m.Name] = m.Pod
		}
		for i, a := range plan.Assignments {
			pod := byName[a.Member]
			up, err := h.Upstream(w.nodes, pods, w.objs, pod)
			if err != nil {
				t.Fatal(err)
			}
			if v := up[a.Node]; !v.OK() {
				t.Fatalf("step %d: %s on %s is refused by kube-scheduler: %+v (plan %v)", i, a.Member, a.Node, v, plan.Assignments)
			}
			bound := pod.DeepCopy()
			bound.Spec.NodeName = a.Node
			pods = append(pods, bound)
		}
	})
}
