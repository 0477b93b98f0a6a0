package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/kubefit"
)

// Plan is a group's placement that muster records, as JSON in the muster.dev/placement
// annotation of the Bindings that carry it out (DESIGN §7).
type Plan struct {
	// Group is the group's key.
	Group string `json:"group"`
	// Attempt counts the group's admissions, starting at 1.
	Attempt int `json:"attempt"`
	// Pods maps member pod names (in the group's namespace) to their assignment.
	Pods map[string]Assignment `json:"pods"`
	// Signature is muster's signature of the rest (see trust.go): a restarted muster
	// acts only on plans it signed, carried by the pods they were made for.
	Signature string `json:"signature,omitempty"`
}

// Assignment is one member's node in a Plan, and the UID of the pod it was made for.
type Assignment struct {
	Node string    `json:"node"`
	UID  types.UID `json:"uid"`
}

// bindWorkers bounds the groups being bound at once. Groups are independent, so their
// binds overlap; the bound keeps each group's own binds close together in time.
const bindWorkers = 8

// bindJob is one plan of the engine's, with everything carrying it out needs, so that
// the binder reads none of the loop's state.
type bindJob struct {
	// plan is the engine's: the group, its attempt and the steps, in order.
	plan engine.Plan
	// record is what the muster.dev/placement annotation records of it.
	record Plan
	// pods[i] is the pod of plan.Steps[i] as the loop last saw it, or nil if it saw none.
	pods []*corev1.Pod
}

// newBindJob prepares plan for the binder, with each step's pod as pod returns it.
func newBindJob(plan engine.Plan, pod func(key string) *corev1.Pod) bindJob {
	job := bindJob{plan: plan, record: Plan{Group: plan.Group, Attempt: max(plan.Attempt, 1), Pods: map[string]Assignment{}}}
	for _, st := range plan.Steps {
		p := pod(st.Pod)
		job.pods = append(job.pods, p)
		if p != nil && st.Kind == engine.StepBind {
			job.record.Pods[p.Name] = Assignment{Node: st.Node, UID: p.UID}
		}
	}
	return job
}

// binder carries out the engine's plans in the background, bindWorkers groups at once,
// while the loop goes on deciding. This is kube-scheduler's binding cycle for groups:
// the engine already counts a bind in flight on its node (the group's pending binds),
// and a step that fails is reported back to the loop, whose next pass places the
// member anew. The binder owns nothing of the loop's: each job carries what it needs.
type binder struct {
	*kit
	signer signer
	jobs   chan bindJob
	wake   func()
	failed failures // pods whose step failed
	// slots bounds the binds in flight, over all groups (see maxBindsInFlight).
	slots chan struct{}
}

// maxBindsInFlight bounds the Binding requests muster has in flight at once. Without
// it a gang of a thousand sent a thousand requests at once: more streams than the API
// server allows one HTTP/2 connection, so the client opened hundreds of connections,
// and their TLS handshakes took half the control plane's CPU in the bench's big-gang
// run. Below kube-apiserver's default of 100 streams per connection
// (--http2-max-streams-per-connection), all binds share one connection.
const maxBindsInFlight = 64

// bindQueue bounds the jobs waiting for a worker; a full queue holds the loop back.
const bindQueue = 1024

func newBinder(k *kit, sig signer, wake func()) *binder {
	return &binder{kit: k, signer: sig, jobs: make(chan bindJob, bindQueue), wake: wake, slots: make(chan struct{}, maxBindsInFlight)}
}

// run binds jobs with bindWorkers workers until ctx is done. Jobs not started by then
// are dropped: none of their binds was made, so no pod carries their plans and the
// next leader finds nothing in flight.
func (b *binder) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range bindWorkers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case job := <-b.jobs:
					if failed := b.execute(ctx, job); len(failed) > 0 {
						b.failed.add(failed...)
						b.wake()
					}
				}
			}
		})
	}
	wg.Wait()
}

// submit queues a job; it waits while the queue is full, or until ctx is done.
func (b *binder) submit(ctx context.Context, job bindJob) {
	select {
	case b.jobs <- job:
	case <-ctx.Done():
	}
}

// takeFailed returns the pods whose binds failed since the last call.
func (b *binder) takeFailed() []string { return b.failed.take() }

// planOnEveryBind bounds the groups whose every Binding carries the plan. A larger
// group's plan rides on its first bind alone, which is made before the others: the
// plan is O(members) bytes, and copying it onto every member would write O(members²).
const planOnEveryBind = 32

// execute carries out one plan's steps and returns the pods whose step failed. It runs
// on the binder's workers, beside other plans, and reads only the job and the kit. A
// plan with a step of a kind the binder does not know is not started: none of its
// members is bound.
//
// The plan travels on the Binding, whose annotations the API server copies onto the pod
// in the same write (DESIGN §7, without a write of its own): no member is bound before
// some bound member carries the plan, so a restarted muster that finds the group partly
// bound reads the whole plan from the members that are. The plan stays on the pods as
// the record of their placement.
func (b *binder) execute(ctx context.Context, job bindJob) []string {
	for _, st := range job.plan.Steps {
		if st.Kind != engine.StepBind {
			b.log.Error(fmt.Errorf("step %q: expected one of [%s]", st.Kind, engine.StepBind), "not carrying out a plan", "group", job.plan.Group)
			return stepPods(job.plan.Steps)
		}
	}
	annotations, err := b.planAnnotations(job.record)
	first := len(job.plan.Steps)
	if err == nil {
		job, first = b.carriersFirst(ctx, job, annotations[musterv1alpha1.PlacementAnnotation])
		if first == 0 {
			err = fmt.Errorf("no member of %s has room for its plan under the %d bytes of annotations the API server accepts",
				job.plan.Group, apivalidation.TotalAnnotationSizeLimitB)
		}
	}
	if err != nil {
		// Binding without the record beats never binding. The cost is this group's
		// crash safety: a muster restarted in the middle of these binds finds no plan
		// to complete or undo.
		b.log.Error(err, "binding without a crash record", "group", job.plan.Group)
		if p := job.pods[0]; p != nil {
			b.event(p, corev1.EventTypeWarning, "PlanNotRecorded", err.Error())
		}
		annotations, first = nil, len(job.plan.Steps)
	}
	if first > planOnEveryBind {
		first = 1
	}
	steps := job.plan.Steps
	errs := make([]error, len(steps))
	b.bindPods(ctx, job, errs, 0, first, annotations)
	if slices.Contains(errs[:first], nil) {
		b.bindPods(ctx, job, errs, first, len(steps), nil)
	} else {
		for i := first; i < len(steps); i++ {
			errs[i] = errPlanNotBound
		}
	}
	var failed []string
	for i, err := range errs {
		if err == nil || ctx.Err() != nil {
			continue
		}
		failed = append(failed, steps[i].Pod)
		if errors.Is(err, errPlanNotBound) {
			continue // the bind was not tried; the failure is reported on the first
		}
		b.log.Error(err, "binding a pod", "pod", steps[i].Pod, "node", steps[i].Node)
		if p := job.pods[i]; p != nil {
			b.event(p, corev1.EventTypeWarning, "FailedBinding", err.Error())
		}
	}
	return failed
}

// stepPods returns the pods of steps, each once.
func stepPods(steps []engine.Step) []string {
	var out []string
	for _, st := range steps {
		if !slices.Contains(out, st.Pod) {
			out = append(out, st.Pod)
		}
	}
	return out
}

// carriersFirst orders job's binds so that the members with room for the plan (value)
// in their annotations come first, and returns the job and how many of them there
// are. Each member without room gets ConditionPlanRecorded=False: the API server
// would refuse its Binding, or the pod, with the plan on it.
func (b *binder) carriersFirst(ctx context.Context, job bindJob, value string) (bindJob, int) {
	var room, none []int
	for i, p := range job.pods {
		if p != nil && hasRoom(p, musterv1alpha1.PlacementAnnotation, value) {
			room = append(room, i)
		} else {
			none = append(none, i)
		}
	}
	if len(none) == 0 {
		return job, len(room)
	}
	for _, i := range none {
		if p := job.pods[i]; p != nil && len(room) > 0 {
			b.markNoRoom(ctx, p, musterv1alpha1.PlacementAnnotation, value, job.pods[room[0]].Name)
		}
	}
	out := bindJob{plan: job.plan, record: job.record}
	out.plan.Steps = nil
	for _, i := range append(room, none...) {
		out.plan.Steps, out.pods = append(out.plan.Steps, job.plan.Steps[i]), append(out.pods, job.pods[i])
	}
	return out, len(room)
}

// maxPlanBytes bounds the encoded plan: the API server refuses a pod whose annotations
// pass 256 KiB in all, and the pod has annotations of its own.
const maxPlanBytes = 200 << 10

// planAnnotations returns the Binding annotations that carry plan, or nil and an error
// saying why the plan cannot be carried (it is too large: about 3,000 members).
func (b *binder) planAnnotations(plan Plan) (map[string]string, error) {
	if err := b.signer.signPlan(&plan); err != nil {
		return nil, err
	}
	data, err := json.Marshal(plan)
	if err != nil {
		return nil, fmt.Errorf("encoding the plan of %s: %w", plan.Group, err)
	}
	if len(data) > maxPlanBytes {
		return nil, fmt.Errorf("the plan of %s (%d members) takes %d bytes, more than the %d that %s may take on a pod",
			plan.Group, len(plan.Pods), len(data), maxPlanBytes, musterv1alpha1.PlacementAnnotation)
	}
	return map[string]string{musterv1alpha1.PlacementAnnotation: string(data)}, nil
}

// errPlanNotBound marks a bind not tried because no bind that carried the plan
// succeeded.
var errPlanNotBound = errors.New("not bound: no member carrying the plan was bound")

// bindPods binds job's pods from up to to (exclusive) concurrently, at most
// maxBindsInFlight at once over all groups, through the Binding subresource, with
// annotations on each Binding, and sets errs[i] to each bind's error. A pod that is
// already bound is never bound again.
func (b *binder) bindPods(ctx context.Context, job bindJob, errs []error, from, to int, annotations map[string]string) {
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		st := job.plan.Steps[i]
		p := job.pods[i]
		if p == nil {
			errs[i] = fmt.Errorf("binding %s: expected the pod in the cache, found none", st.Pod)
			continue
		}
		if p.Spec.NodeName != "" {
			errs[i] = fmt.Errorf("binding %s to %s: expected an unbound pod, found it bound to %s", st.Pod, st.Node, p.Spec.NodeName)
			continue
		}
		select {
		case b.slots <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-b.slots }()
			if errs[i] = b.bindVolumes(ctx, p, st.BindVolumes); errs[i] == nil {
				if errs[i] = b.provision(ctx, p, st.Node, st.Provision); errs[i] == nil {
					if errs[i] = b.allocateClaims(ctx, p, st.Claims); errs[i] == nil {
						errs[i] = b.bindPod(ctx, p, st.Node, annotations)
					}
					if errs[i] != nil && len(st.Claims) > 0 {
						// Not bound: its devices go back, as kube-scheduler's Unreserve
						// gives them back after a failed bind.
						b.releaseClaims(ctx, p)
					}
				}
			}
		})
	}
	wg.Wait()
}

// provision names node on p's claims that wait for a scheduler to choose their node
// (annotation volume.kubernetes.io/selected-node, as kube-scheduler's VolumeBinding
// writes it), so that their provisioner creates the volumes there. A claim bound
// meanwhile, or naming node already, needs nothing; one naming another node is a
// conflict, and p is not bound.
func (b *binder) provision(ctx context.Context, p *corev1.Pod, node string, claims []string) error {
	for _, name := range claims {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := b.cache.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, pvc); err != nil {
			return fmt.Errorf("provisioning claim %s/%s of %s on %s: %w", p.Namespace, name, p.Name, node, err)
		}
		// Members sharing a claim name it in turn: a conflict is a write the cache has not
		// shown yet, read again from the API server.
		for try := 0; ; try++ {
			done, err := b.selectNode(ctx, pvc, node)
			if err == nil && done {
				break
			}
			if !apierrors.IsConflict(err) || try == 2 {
				return fmt.Errorf("provisioning claim %s/%s of %s on %s: %w", p.Namespace, name, p.Name, node, err)
			}
			if pvc, err = b.kube.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("provisioning claim %s/%s of %s on %s: %w", p.Namespace, name, p.Name, node, err)
			}
		}
	}
	return nil
}

// selectNode names node on pvc, unless it is bound or names node already; it reports
// whether the claim now names node (or needs nothing), and fails on a claim that names
// another node.
func (b *binder) selectNode(ctx context.Context, pvc *corev1.PersistentVolumeClaim, node string) (bool, error) {
	if pvc.Spec.VolumeName != "" {
		return true, nil
	}
	switch at := pvc.Annotations[selectedNodeAnnotation]; at {
	case node:
		return true, nil
	case "":
	default:
		return false, fmt.Errorf("the claim names node %s already", at)
	}
	patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"annotations":{%q:%q}}}`, pvc.ResourceVersion, selectedNodeAnnotation, node)
	if _, err := b.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		return false, err
	}
	return true, nil
}

// bindVolumes binds p's claims to the volumes placement chose for them on p's node, as
// kube-scheduler's VolumeBinding does: the volume's spec.claimRef names the claim, and
// upstream's PersistentVolume controller completes the binding. A volume bound to the
// claim already needs nothing; one taken by another claim meanwhile is a conflict, and p
// is not bound.
func (b *binder) bindVolumes(ctx context.Context, p *corev1.Pod, bindings []kubefit.StaticBinding) error {
	for _, vb := range bindings {
		fail := func(err error) error {
			return fmt.Errorf("binding claim %s/%s of %s to volume %s: %w", p.Namespace, vb.Claim, p.Name, vb.Volume, err)
		}
		claim := &corev1.PersistentVolumeClaim{}
		if err := b.cache.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: vb.Claim}, claim); err != nil {
			return fail(err)
		}
		pv := &corev1.PersistentVolume{}
		if err := b.cache.Get(ctx, types.NamespacedName{Name: vb.Volume}, pv); err != nil {
			return fail(err)
		}
		if ref := pv.Spec.ClaimRef; ref != nil && !volumehelpers.IsVolumeBoundToClaim(pv, claim) {
			return fail(fmt.Errorf("the volume is bound to claim %s/%s", ref.Namespace, ref.Name))
		}
		bound, dirty, err := volumehelpers.GetBindVolumeToClaim(pv, claim)
		if err != nil {
			return fail(err)
		}
		if !dirty {
			continue
		}
		if _, err := b.kube.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
			return fail(err)
		}
	}
	return nil
}

// selectedNodeAnnotation names the node a WaitForFirstConsumer claim's volume is to be
// provisioned on; a scheduler sets it.
const selectedNodeAnnotation = "volume.kubernetes.io/selected-node"

// bindPod binds p to node through the Binding subresource. The API server adds the
// Binding's annotations to the pod's.
func (b *binder) bindPod(ctx context.Context, p *corev1.Pod, node string, annotations map[string]string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Annotations: annotations},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := b.kube.CoreV1().Pods(p.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding %s/%s to %s: %w", p.Namespace, p.Name, node, err)
	}
	return nil
}

// names returns the planned pods' names, sorted.
func (p *Plan) names() []string {
	return sortedKeys(p.Pods)
}
