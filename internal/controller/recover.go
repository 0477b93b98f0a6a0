package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-helpers/storage/ephemeral"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/source"
)

// recovery runs once, when muster starts leading, before the loop: it carries out the
// recreation records and settles the plans a previous leader left in flight, with the
// binder's own steps and placement's own fit check.
type recovery struct {
	*kit
	signer  signer
	binder  *binder
	evictor *evictor
	filters *kubefit.Host
	// dra is set when the cluster serves DRA: claims are loaded, and reservations of
	// members never bound released; taintRules when it serves DeviceTaintRules too.
	dra, taintRules bool
}

// run carries out the recreation records and settles the plans a previous
// leader left in flight, before the loop schedules anything: a plan whose members are
// only partly bound is completed when the rest still fit on their nodes, and undone
// (its bound members evicted) otherwise. A pod already bound is never bound again.
func (r *recovery) run(ctx context.Context) error {
	if err := r.evictor.loadRecords(ctx); err != nil {
		return err
	}
	plans, err := r.findPlans(ctx)
	if err != nil {
		return err
	}
	if len(plans) == 0 {
		return r.releaseOrphans(ctx)
	}
	var nodes corev1.NodeList
	var pods corev1.PodList
	if err := r.cache.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	if err := r.cache.List(ctx, &pods); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	snap := cluster.FromLists(nodes.Items, pods.Items)
	if err := r.loadObjects(ctx, snap); err != nil {
		return err
	}
	var bound []*corev1.Pod
	for _, key := range sortedKeys(plans) {
		bound = append(bound, r.settle(ctx, snap, plans[key])...)
	}
	if err := r.awaitBound(ctx, bound); err != nil {
		return err
	}
	return r.releaseOrphans(ctx)
}

// releaseOrphans releases the DRA claims reserved for members muster never bound, when
// the cluster serves DRA.
func (r *recovery) releaseOrphans(ctx context.Context) error {
	if !r.dra {
		return nil
	}
	return r.releaseOrphanReservations(ctx)
}

// awaitBound waits until the cache shows every pod bound that recovery bound, so that
// the loop never sees them unbound and places them again.
func (r *recovery) awaitBound(ctx context.Context, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			got := &corev1.Pod{}
			err := r.cache.Get(ctx, client.ObjectKeyFromObject(p), got)
			if apierrors.IsNotFound(err) || (err == nil && (got.UID != p.UID || got.Spec.NodeName != "")) {
				continue // gone, replaced, or seen bound
			}
			return false, nil
		}
		return true, nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		// The loop's own bind would be refused by the API server; say so and go on.
		r.log.Error(err, "the cache did not show every pod recovery bound", "pods", len(pods))
	}
	return nil
}

// findPlans returns the plans that bound pods of muster's carry, by their recorded
// text: the members of a group may carry different plans (a finished one, and the one
// that placed a replacement), and each is settled on its own. Only plans that verify
// against their carrier are returned (see verifyPlan): a tenant can write any
// annotation on their own pods, even create them bound, and a plan is a list of pods
// for muster to bind or evict. The others are ignored, with an UntrustedRecord Event
// on the carrier.
func (r *recovery) findPlans(ctx context.Context) (map[string]*Plan, error) {
	var pods corev1.PodList
	if err := r.cache.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	plans := map[string]*Plan{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		v, ok := pod.Annotations[musterv1alpha1.PlacementAnnotation]
		if !ok || pod.Spec.NodeName == "" || plans[v] != nil {
			continue
		}
		if !r.cfg.Schedules(pod.Spec.SchedulerName) {
			r.kit.untrusted(pod, KindPlan, &untrusted{UntrustedNotOurs,
				fmt.Sprintf("spec.schedulerName: %q: only muster's pods (%s) carry its plans", pod.Spec.SchedulerName, source.ExpectedSchedulerNames(r.cfg.SchedulerNames()))})
			continue
		}
		p, bad := r.signer.verifyPlan(pod, v)
		if bad != nil {
			r.kit.untrusted(pod, KindPlan, bad)
			continue
		}
		plans[v] = p
	}
	return plans, nil
}

// settle completes or undoes a plan in flight: one whose members are partly bound. A
// plan all of whose members are bound, or gone, is left as it is: the first is the
// record of a finished placement, and the second holds no node. Settling leaves no
// plan partly bound (its members all bound, or its bound members evicted), unless a
// bind or an eviction fails, and then the next leader settles it again.
func (r *recovery) settle(ctx context.Context, snap *cluster.Snapshot, plan *Plan) (completed []*corev1.Pod) {
	ns := refOfKey(plan.Group).Namespace
	var bound, unbound []*corev1.Pod
	for _, name := range plan.names() {
		p := &corev1.Pod{}
		err := r.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
		if err != nil || p.UID != plan.Pods[name].UID || !r.cfg.Schedules(p.Spec.SchedulerName) || !claims(p, plan.Group) {
			continue // gone, replaced, another scheduler's, or no longer the group's
		}
		if p.Spec.NodeName != "" {
			bound = append(bound, p)
		} else {
			unbound = append(unbound, p)
		}
	}
	if len(bound) == 0 || len(unbound) == 0 {
		return nil
	}
	r.dropExtendedClaims(ctx, snap, unbound)
	devices, why, ok := fits(snap, plan, unbound)
	if !ok {
		r.log.Info("undoing a plan in flight whose nodes no longer fit", "group", plan.Group, "evicting", len(bound), "why", why)
		for _, p := range bound {
			r.evictor.evictPod(ctx, p, engine.Eviction{Group: plan.Group, Pod: podKey(p), Reason: "PlanUndone",
				Message: fmt.Sprintf("%d of %d planned members were bound when muster stopped and the rest no longer fit: %s",
					len(bound), len(bound)+len(unbound), why)})
		}
		r.releaseVolumeClaims(ctx, plan, unbound)
		for _, p := range unbound {
			r.kit.releaseClaims(ctx, p)
		}
		return nil
	}
	r.log.Info("completing a plan in flight", "group", plan.Group, "bound", len(bound), "binding", len(unbound))
	job := bindJob{plan: engine.Plan{Group: plan.Group, Attempt: plan.Attempt}, record: *plan, pods: unbound}
	for _, p := range unbound {
		node := plan.Pods[p.Name].Node
		vols, err := placement.VolumesOn(snap, node, placement.Member{Name: podKey(p), Pod: p})
		if err != nil {
			r.log.Error(err, "completing a plan in flight: the member's claims cannot be satisfied on its node", "pod", podKey(p), "node", node)
		}
		job.plan.Steps = append(job.plan.Steps, engine.Step{Kind: engine.StepBind, Pod: podKey(p), Node: node,
			Provision: vols.Provision, BindVolumes: vols.Bind, Claims: devices[p.Name]})
	}
	failed := map[string]bool{}
	for _, key := range r.binder.execute(ctx, job) {
		failed[key] = true
	}
	for _, p := range unbound {
		if !failed[podKey(p)] {
			completed = append(completed, p)
		}
	}
	return completed
}

// dropExtendedClaims deletes the claims for extended resources backed by DRA that the
// stopped muster made for pods it did not bind, and takes them off snap: kube-scheduler's
// DynamicResources plugin refuses every node to a pod whose claim from an earlier
// attempt is there, and completing the plan allocates the pod's devices anew.
func (r *recovery) dropExtendedClaims(ctx context.Context, snap *cluster.Snapshot, unbound []*corev1.Pod) {
	for _, p := range unbound {
		claim := snap.ResourceClaim(p.Namespace + "/" + kubefit.ExtendedClaimName(p))
		if claim == nil || !kubefit.IsExtendedClaimOf(claim, p) {
			continue
		}
		if err := r.kit.deleteExtended(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			r.log.Error(err, "deleting the extended resources' claim of a member not bound", "pod", podKey(p))
			continue
		}
		snap.RemoveObject(claim)
	}
}

// releaseVolumeClaims undoes the provisioning writes of a plan undone: a claim of an unbound
// member that names the member's planned node and has no volume yet names none again, so
// that the member's next placement may choose another node (the signal a provisioner
// gives a scheduler when it cannot provision). A claim already provisioned keeps its
// volume, and its node; a volume bound by the plan stays bound, as kube-scheduler
// leaves the volume writes of a pod it fails to bind.
func (r *recovery) releaseVolumeClaims(ctx context.Context, plan *Plan, unbound []*corev1.Pod) {
	for _, p := range unbound {
		node := plan.Pods[p.Name].Node
		for _, v := range p.Spec.Volumes {
			name := ""
			switch {
			case v.PersistentVolumeClaim != nil:
				name = v.PersistentVolumeClaim.ClaimName
			case v.Ephemeral != nil:
				name = ephemeral.VolumeClaimName(p, &v)
			default:
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			if err := r.cache.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, pvc); err != nil ||
				pvc.Spec.VolumeName != "" || pvc.Annotations[selectedNodeAnnotation] != node {
				continue
			}
			patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"annotations":{%q:null}}}`, pvc.ResourceVersion, selectedNodeAnnotation)
			if _, err := r.kube.CoreV1().PersistentVolumeClaims(p.Namespace).Patch(ctx, name, types.MergePatchType,
				[]byte(patch), metav1.PatchOptions{}); err != nil {
				r.log.Error(err, "undoing a plan in flight: releasing a claim's node", "claim", p.Namespace+"/"+name, "node", node)
			}
		}
	}
}

// loadObjects gives snap the objects placement's filters read besides nodes and pods,
// from the cache, and the configured filters.
func (r *recovery) loadObjects(ctx context.Context, snap *cluster.Snapshot) error {
	if r.filters != nil {
		kubefit.Use(snap, r.filters)
	}
	lists := []client.ObjectList{&corev1.NamespaceList{}, &corev1.PersistentVolumeClaimList{},
		&corev1.PersistentVolumeList{}, &storagev1.StorageClassList{}, &storagev1.CSINodeList{}, &storagev1.CSIDriverList{}}
	if r.dra {
		lists = append(lists, &resourcev1.ResourceClaimList{}, &resourcev1.ResourceSliceList{}, &resourcev1.DeviceClassList{})
	}
	if r.dra && r.taintRules {
		lists = append(lists, &resourcev1.DeviceTaintRuleList{})
	}
	for _, list := range lists {
		if err := r.cache.List(ctx, list); err != nil {
			return fmt.Errorf("listing %T: %w", list, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			snap.SetObject(o)
			return nil
		}); err != nil {
			return fmt.Errorf("reading %T: %w", list, err)
		}
	}
	return nil
}

// fits reports whether every unbound pod still fits on its planned node, by
// placement's own predicates, assuming each on the snapshot in turn with its DRA claims
// allocated there (returned by pod name); when one does not, it says which and why.
func fits(snap *cluster.Snapshot, plan *Plan, unbound []*corev1.Pod) (map[string][]kubefit.ClaimAllocation, string, bool) {
	devices := map[string][]kubefit.ClaimAllocation{}
	for _, p := range unbound {
		node := plan.Pods[p.Name].Node
		m := placement.Member{Name: podKey(p), Pod: p}
		if why, ok := placement.FitsOn(snap, node, m); !ok {
			return nil, fmt.Sprintf("%s on %s: %s", p.Name, node, why), false
		}
		claims, err := placement.ClaimsOn(snap, node, m)
		if err != nil {
			return nil, fmt.Sprintf("%s on %s: %v", p.Name, node, err), false
		}
		devices[p.Name] = claims
		snap.Bind(p, node)
	}
	return devices, "", true
}

// claims reports whether pod p names group gk, or is gk itself, a group of one (a pod
// naming no group, or a member of a basic native PodGroup, see basic.go).
func claims(p *corev1.Pod, gk string) bool {
	return source.GroupOf(p).Key() == gk || (source.Ref{Source: engine.Single, Namespace: p.Namespace, Name: p.Name}).Key() == gk
}
