package kubefit

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"

	"github.com/muster-sched/muster/internal/cluster"
)

// Verdict is a plugin's answer for one pod on one node: the plugin and its reasons, in
// kube-scheduler's words. The zero Verdict means the node passes every filter.
type Verdict struct {
	// Plugin is the plugin that rejected the node ("" when it passes).
	Plugin string
	// Reasons are the plugin's messages, e.g. "node(s) didn't match pod anti-affinity rules".
	Reasons []string
	// Unresolvable is kube-scheduler's UnschedulableAndUnresolvable: removing pods from the
	// node would not help.
	Unresolvable bool
}

// OK reports whether the node passes.
func (v Verdict) OK() bool { return v.Plugin == "" && len(v.Reasons) == 0 }

func verdictOf(st *fwk.Status) Verdict {
	if st.IsSuccess() {
		return Verdict{}
	}
	v := Verdict{Plugin: st.Plugin(), Reasons: st.Reasons(), Unresolvable: st.Code() == fwk.UnschedulableAndUnresolvable}
	if len(v.Reasons) == 0 {
		v.Reasons = []string{st.Message()}
	}
	if st.Code() == fwk.Error {
		v.Reasons = []string{fmt.Sprintf("plugin %s failed: %v", st.Plugin(), st.AsError())}
	}
	if v.Plugin == "" {
		v.Plugin = "PreFilter"
	}
	return v
}

// Cycle evaluates one pod, a member shape, on one snapshot: the PreFilter plugins run
// once, when the Cycle begins, and Filter per node after; Added and Removed keep the
// PreFilter state current as placement assumes and reverts members on the snapshot, as
// kube-scheduler's preemption does with its PreFilter extensions.
type Cycle struct {
	h     *Host
	snap  *cluster.Snapshot
	pod   *corev1.Pod
	state *framework.CycleState
	// rejected, when set, is PreFilter's verdict for every node; allowed, when set, is the
	// only nodes PreFilter left (a local volume, a node name field selector).
	rejected *Verdict
	allowed  sets.Set[string]
	outside  Verdict
	// extended is set when pod asks for an extended resource backed by DRA: the
	// plugin's allocator is made at PreFilter, with the devices allocated then, so the
	// cycle runs PreFilter again after each member placed.
	extended bool
}

var background = context.Background()

// Begin runs the PreFilter plugins for pod on snap.
func (h *Host) Begin(snap *cluster.Snapshot, pod *corev1.Pod) (*Cycle, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(snap); err != nil {
		return nil, err
	}
	c := &Cycle{h: h, snap: snap, pod: pod, extended: h.asksExtendedByDRA(pod)}
	if err := c.preFilter(); err != nil {
		return nil, err
	}
	return c, nil
}

// preFilter runs the PreFilter plugins on the snapshot as it is now, into a new cycle
// state. The host's lock is held and the snapshot loaded.
func (c *Cycle) preFilter() error {
	c.h.current.syncAll()
	c.state, c.rejected, c.allowed = framework.NewCycleState(), nil, nil
	res, st, plugins := c.h.fw.RunPreFilterPlugins(background, c.state, c.pod)
	switch {
	case st.IsRejected():
		v := verdictOf(st)
		c.rejected = &v
	case !st.IsSuccess():
		return fmt.Errorf("kube-scheduler's PreFilter for %s/%s: %w", c.pod.Namespace, c.pod.Name, st.AsError())
	case !res.AllNodes():
		c.allowed = res.NodeNames
		c.outside = Verdict{Plugin: "PreFilter", Unresolvable: true,
			Reasons: []string{fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(plugins))}}
	}
	return nil
}

// hardSpread reports whether pod has a topology spread constraint it must not violate.
func hardSpread(pod *corev1.Pod) bool {
	for _, tc := range pod.Spec.TopologySpreadConstraints {
		if tc.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}

// Filter is the plugins' verdict for the cycle's pod on node n of the cycle's snapshot,
// with everything the snapshot counts there now (assumed members included).
func (c *Cycle) Filter(n *cluster.NodeInfo) Verdict {
	if c.rejected != nil {
		return *c.rejected
	}
	if c.allowed != nil && !c.allowed.Has(n.Name()) {
		return c.outside
	}
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	if err := c.h.load(c.snap); err != nil {
		return Verdict{Plugin: "muster", Reasons: []string{err.Error()}}
	}
	return verdictOf(c.h.fw.RunFilterPlugins(background, c.state, c.pod, c.h.current.info(n)))
}

// Added tells the cycle that pod was assumed on node n of its snapshot (after the
// snapshot counts it), so that the pods placed after it see it. The snapshot must
// count pod already.
func (c *Cycle) Added(pod *corev1.Pod, n *cluster.NodeInfo) error {
	return c.extend(pod, n, true)
}

// Removed tells the cycle that pod, added before, is no longer on node n.
func (c *Cycle) Removed(pod *corev1.Pod, n *cluster.NodeInfo) error {
	return c.extend(pod, n, false)
}

func (c *Cycle) extend(pod *corev1.Pod, n *cluster.NodeInfo, add bool) error {
	if c.rejected != nil {
		return nil
	}
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	if err := c.h.load(c.snap); err != nil {
		return err
	}
	if hardSpread(c.pod) || c.extended {
		// PodTopologySpread keeps, per key, only the two domains with the fewest
		// matching pods; its AddPod raises a count without finding the next smallest
		// domain, so after a few members it would allow a skew that a fresh cycle
		// refuses. A fresh PreFilter on the snapshot, which counts pod now, is what
		// kube-scheduler's cycle for the next member would see.
		return c.preFilter()
	}
	cp := pod.DeepCopy()
	cp.Spec.NodeName = n.Name()
	pi, err := framework.NewPodInfo(cp)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	info := c.h.current.info(n)
	var st *fwk.Status
	if add {
		st = c.h.fw.RunPreFilterExtensionAddPod(background, c.state, c.pod, pi, info)
	} else {
		st = c.h.fw.RunPreFilterExtensionRemovePod(background, c.state, c.pod, pi, info)
	}
	if !st.IsSuccess() {
		return fmt.Errorf("kube-scheduler's PreFilter extensions for %s/%s: %w", c.pod.Namespace, c.pod.Name, st.AsError())
	}
	return nil
}

// Volumes are the volume decisions for one pod on one node, as kube-scheduler's
// VolumeBinding makes them: Provision names its unbound claims of WaitForFirstConsumer
// classes to provision there (annotation volume.kubernetes.io/selected-node), Bind its
// unbound claims to bind to existing volumes that the node can reach.
type Volumes struct {
	Provision []string
	Bind      []StaticBinding
}

// StaticBinding binds claim Claim (of the pod's namespace) to the PersistentVolume
// Volume.
type StaticBinding struct {
	Claim, Volume string
}

// Volumes returns the volume decisions for pod on node n of the cycle's snapshot, or why
// its claims cannot be satisfied there.
//
// pod is the member (the cycle's pod or one of its shape: a generic ephemeral volume's
// claim is named after its pod). The claims are read as they are now, with the
// decisions of members assumed before (Assume) counted: a claim another member will
// provision on another node, or a volume another member takes, rules this node out.
func (c *Cycle) Volumes(pod *corev1.Pod, n *cluster.NodeInfo) (Volumes, error) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	vols, err := c.podVolumes(pod, n)
	if err != nil || vols == nil {
		return Volumes{}, err
	}
	var out Volumes
	for _, d := range vols.DynamicProvisions {
		out.Provision = append(out.Provision, d.PVC.Name)
	}
	for _, b := range vols.StaticBindings {
		claim, volume, err := bindingOf(b)
		if err != nil {
			return Volumes{}, err
		}
		out.Bind = append(out.Bind, StaticBinding{Claim: claim, Volume: volume})
	}
	return out, nil
}

// bindingOf reads the claim and volume of one of VolumeBinding's static bindings.
// BindingInfo keeps both unexported and has no accessor for them; reading the names by
// reflection takes the plugin's own choice of volume instead of making it again. A
// field renamed upstream is an error here, and TestStaticBinding fails.
func bindingOf(b *volumebinding.BindingInfo) (claim, volume string, err error) {
	v := reflect.ValueOf(b).Elem()
	name := func(field string) (string, error) {
		f := v.FieldByName(field)
		if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
			return "", fmt.Errorf("kube-scheduler's VolumeBinding: BindingInfo has no %s", field)
		}
		return f.Elem().FieldByName("ObjectMeta").FieldByName("Name").String(), nil
	}
	if claim, err = name("pvc"); err != nil {
		return "", "", err
	}
	volume, err = name("pv")
	return claim, volume, err
}

// Assume counts pod's volume decisions on node n for the members placed after it, as
// kube-scheduler's VolumeBinding Reserve does (the claims, in the plugin's assume cache,
// name n); revert undoes it.
func (c *Cycle) Assume(pod *corev1.Pod, n *cluster.NodeInfo) (revert func(), err error) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	vols, err := c.podVolumes(pod, n)
	if err != nil || vols == nil || len(vols.DynamicProvisions)+len(vols.StaticBindings) == 0 {
		return func() {}, err
	}
	if _, err := c.h.volumes.Binder.AssumePodVolumes(klog.Background(), pod, n.Name(), vols); err != nil {
		return func() {}, err
	}
	return func() {
		c.h.mu.Lock()
		defer c.h.mu.Unlock()
		c.h.volumes.Binder.RevertAssumedPodVolumes(vols)
	}, nil
}

// podVolumes is VolumeBinding's decision for pod's claims on n; the Host is locked.
func (c *Cycle) podVolumes(pod *corev1.Pod, n *cluster.NodeInfo) (*volumebinding.PodVolumes, error) {
	if !HasClaims(pod) {
		return nil, nil
	}
	if err := c.h.load(c.snap); err != nil {
		return nil, err
	}
	vb := c.h.volumes
	if vb == nil {
		return nil, fmt.Errorf("kube-scheduler's VolumeBinding plugin is not built")
	}
	logger := klog.Background()
	claims, err := vb.Binder.GetPodVolumeClaims(logger, pod)
	if err != nil {
		return nil, err
	}
	vols, reasons, err := vb.Binder.FindPodVolumes(logger, pod, claims, n.Node)
	switch {
	case err != nil:
		return nil, err
	case len(reasons) > 0:
		return nil, fmt.Errorf("%s", reasons[0])
	}
	return vols, nil
}

// HasClaims reports whether a pod mounts PersistentVolumeClaims (named or ephemeral).
func HasClaims(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}
