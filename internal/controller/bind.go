package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

// Plan is the placement in flight that muster records, as JSON in the
// muster.dev/placement annotation, before the first bind of a group (DESIGN §7).
type Plan struct {
	// Group is the group's key.
	Group string `json:"group"`
	// Attempt counts the group's admissions, starting at 1.
	Attempt int `json:"attempt"`
	// Pods maps member pod names (in the group's namespace) to their assignment.
	Pods map[string]Assignment `json:"pods"`
}

// Assignment is one member's node in a Plan, and the UID of the pod it was made for.
type Assignment struct {
	Node string    `json:"node"`
	UID  types.UID `json:"uid"`
}

// bindWorkers bounds the groups being bound at once. Groups are independent, so their
// binds overlap; the bound keeps each group's own binds close together in time.
const bindWorkers = 8

// bindJob is one admitted group's binds, with everything binding them needs, so that
// the binder reads none of the loop's state.
type bindJob struct {
	group string
	plan  Plan
	binds []engine.Bind
	// pods[i] is the pod of binds[i] as the loop last saw it, or nil if it saw none.
	pods []*corev1.Pod
}

// binder binds admitted groups in the background, bindWorkers groups at once, while
// the loop goes on deciding. This is kube-scheduler's binding cycle for groups: the
// engine already counts a bind in flight on its node (the group's pending binds), and a
// bind that fails is reported back to the loop, whose next pass places the member
// anew.
type binder struct {
	jobs chan bindJob
	wake func()

	mu     sync.Mutex
	failed []string
}

// bindQueue bounds the jobs waiting for a worker; a full queue holds the loop back.
const bindQueue = 1024

func newBinder(wake func()) *binder {
	return &binder{jobs: make(chan bindJob, bindQueue), wake: wake}
}

// run binds jobs with bindWorkers workers until ctx is done. Jobs not started by then
// are dropped: their plans were never written, so the next leader finds nothing in
// flight.
func (b *binder) run(ctx context.Context, bind func(context.Context, bindJob) []string) {
	var wg sync.WaitGroup
	for range bindWorkers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case job := <-b.jobs:
					if failed := bind(ctx, job); len(failed) > 0 {
						b.mu.Lock()
						b.failed = append(b.failed, failed...)
						b.mu.Unlock()
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
func (b *binder) takeFailed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.failed
	b.failed = nil
	return out
}

// bindAll hands each group's binds, with its plan, to the binder.
func (s *scheduler) bindAll(ctx context.Context, binds []engine.Bind) {
	byGroup := map[string][]engine.Bind{}
	var order []string
	for _, b := range binds {
		if byGroup[b.Group] == nil {
			order = append(order, b.Group)
		}
		byGroup[b.Group] = append(byGroup[b.Group], b)
	}
	for _, gk := range order {
		job := bindJob{group: gk, plan: s.planOf(gk, byGroup[gk]), binds: byGroup[gk]}
		for _, b := range job.binds {
			job.pods = append(job.pods, s.pods[b.Pod])
		}
		s.binder.submit(ctx, job)
	}
}

// planOf is the plan a group's binds carry out, with the group's earlier binds that
// may still be in flight (assigned by the engine, not yet seen bound): a plan replaces
// the one before it on the object, so it must cover every bind not yet observed.
func (s *scheduler) planOf(gk string, binds []engine.Bind) Plan {
	plan := Plan{Group: gk, Attempt: 1, Pods: map[string]Assignment{}}
	if st, ok := s.eng.Group(gk); ok {
		plan.Attempt = max(st.Attempt, 1)
		for key, node := range st.Placement {
			if p := s.pods[key]; p != nil && p.Spec.NodeName == "" {
				plan.Pods[p.Name] = Assignment{Node: node, UID: p.UID}
			}
		}
	}
	for _, b := range binds {
		if p := s.pods[b.Pod]; p != nil {
			plan.Pods[p.Name] = Assignment{Node: b.Node, UID: p.UID}
		}
	}
	return plan
}

// bindGroup writes the plan of one group and binds its members. It returns the
// members whose bind failed. It runs on the binder's workers, beside other groups'
// bindGroup, and reads only the job and the scheduler's clients.
//
// The plan stays on the object after the binds: it is the record of the group's last
// placement, and clearing it would cost one more write per group. It stays correct
// because every bind is preceded by the plan that covers it, so the plan on an object
// always describes the latest binds; a restarted muster acts only on a plan that is
// partly bound (see settle).
func (s *scheduler) bindGroup(ctx context.Context, job bindJob) []string {
	var failed []string
	if err := s.writePlan(ctx, job.group, job.plan.names(), &job.plan); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		s.log.Error(err, "recording the plan before binding; the group is placed again", "group", job.group)
		for _, b := range job.binds {
			failed = append(failed, b.Pod)
		}
		return failed
	}
	errs := s.bindPods(ctx, job)
	for i, err := range errs {
		if err != nil && !errors.Is(err, errSkipped) && ctx.Err() == nil {
			s.log.Error(err, "binding a pod", "pod", job.binds[i].Pod, "node", job.binds[i].Node)
			if p := job.pods[i]; p != nil {
				s.event(p, corev1.EventTypeWarning, "FailedBinding", err.Error())
			}
			failed = append(failed, job.binds[i].Pod)
		}
	}
	return failed
}

// errSkipped marks a bind that BeforeBind skipped.
var errSkipped = errors.New("bind skipped by BeforeBind")

// bindPods binds a job's pods concurrently through the Binding subresource and returns
// each bind's error. A pod that is already bound is never bound again.
func (s *scheduler) bindPods(ctx context.Context, job bindJob) []error {
	errs := make([]error, len(job.binds))
	var wg sync.WaitGroup
	for i, b := range job.binds {
		if s.beforeBind != nil && !s.beforeBind(b.Pod, b.Node) {
			errs[i] = errSkipped
			continue
		}
		p := job.pods[i]
		if p == nil {
			errs[i] = fmt.Errorf("binding %s: expected the pod in the cache, found none", b.Pod)
			continue
		}
		if p.Spec.NodeName != "" {
			errs[i] = fmt.Errorf("binding %s to %s: expected an unbound pod, found it bound to %s", b.Pod, b.Node, p.Spec.NodeName)
			continue
		}
		wg.Go(func() { errs[i] = s.bindPod(ctx, p, b.Node) })
	}
	wg.Wait()
	return errs
}

// bindPod binds p to node through the Binding subresource.
func (s *scheduler) bindPod(ctx context.Context, p *corev1.Pod, node string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := s.kube.CoreV1().Pods(p.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding %s/%s to %s: %w", p.Namespace, p.Name, node, err)
	}
	return nil
}

// writePlan records plan on the group object, or on the member pods named for groups
// with no object; a nil plan removes the record.
func (s *scheduler) writePlan(ctx context.Context, gk string, names []string, plan *Plan) error {
	var value any // JSON null deletes the annotation in a merge patch
	if plan != nil {
		data, err := json.Marshal(plan)
		if err != nil {
			return fmt.Errorf("encoding the plan of %s: %w", gk, err)
		}
		value = string(data)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{musterv1alpha1.PlacementAnnotation: value},
	}})
	if err != nil {
		return fmt.Errorf("encoding the plan patch of %s: %w", gk, err)
	}
	ref := refOfKey(gk)
	if api := apiOf(ref.Source); api != nil {
		_, err := s.dyn.Resource(api.gvr).Namespace(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("writing %s on %s %s/%s: %w", musterv1alpha1.PlacementAnnotation, api.gvr.Resource, ref.Namespace, ref.Name, err)
		}
		return nil
	}
	for _, name := range names {
		_, err := s.kube.CoreV1().Pods(ref.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && (plan != nil || !apierrors.IsNotFound(err)) {
			return fmt.Errorf("writing %s on pod %s/%s: %w", musterv1alpha1.PlacementAnnotation, ref.Namespace, name, err)
		}
	}
	return nil
}

// names returns the planned pods' names, sorted.
func (p *Plan) names() []string {
	return sortedKeys(p.Pods)
}
