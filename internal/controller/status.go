package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/source"
)

// StatusAnnotation holds, as a JSON list of metav1.Condition, the conditions of a
// scheduler-plugins PodGroup, whose API has no conditions field.
const StatusAnnotation = "muster.dev/status"

// The condition types muster writes on group objects.
const (
	ConditionAdmitted      = "Admitted"
	ConditionPodsReady     = "PodsReady"
	ConditionUnschedulable = "Unschedulable"
	ConditionImpossible    = "Impossible"
	ConditionEvicted       = "Evicted"
	ConditionFailed        = "Failed"
)

// ReasonInvalidGroup is the reason of the Impossible condition of a group whose spec
// is invalid.
const ReasonInvalidGroup = "InvalidGroup"

// Conditions returns a group's conditions from its engine status. Each type is True or
// False; the reason and message come from the engine.
func Conditions(st engine.Status) []metav1.Condition {
	reason, message := st.Reason, st.Message
	if reason == "" {
		reason = "Pending"
	}
	if message == "" {
		message = "waiting for the group's object and members"
	}
	c := func(typ string, on bool) metav1.Condition {
		status := metav1.ConditionFalse
		if on {
			status = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
	}
	p := st.Phase
	admitted := p == lifecycle.Binding || p == lifecycle.Starting || p == lifecycle.Running ||
		p == lifecycle.Recovering || p == lifecycle.Finished
	conds := []metav1.Condition{
		c(ConditionAdmitted, admitted),
		c(ConditionPodsReady, p == lifecycle.Running || p == lifecycle.Finished),
		c(ConditionUnschedulable, p == lifecycle.Queued && st.Waiting != ""),
		c(ConditionImpossible, p == lifecycle.Impossible || st.Invalid != ""),
		c(ConditionEvicted, p == lifecycle.Backoff),
		c(ConditionFailed, p == lifecycle.Failed),
	}
	switch {
	case st.Invalid != "":
		conds[3].Reason, conds[3].Message = ReasonInvalidGroup, st.Invalid
	case (p == lifecycle.Queued || p == lifecycle.Impossible) && st.Waiting != "":
		i := 2
		if p == lifecycle.Impossible {
			i = 3
		}
		conds[i].Reason, conds[i].Message = st.WaitingKind, st.Waiting
	}
	return conds
}

// podGroupPhase maps a lifecycle phase to a scheduler-plugins PodGroup phase.
func podGroupPhase(st engine.Status) spv1alpha1.PodGroupPhase {
	switch st.Phase {
	case lifecycle.Binding, lifecycle.Starting:
		return spv1alpha1.PodGroupScheduling
	case lifecycle.Running, lifecycle.Recovering:
		return spv1alpha1.PodGroupRunning
	case lifecycle.Finished:
		return spv1alpha1.PodGroupFinished
	case lifecycle.Failed:
		return spv1alpha1.PodGroupFailed
	}
	return spv1alpha1.PodGroupPending
}

// writeStatuses writes the conditions of every group object whose status changed.
func (s *scheduler) writeStatuses(ctx context.Context) {
	for _, key := range s.eng.Groups() {
		obj := s.objects[key]
		if obj == nil {
			continue
		}
		st, _ := s.eng.Group(key)
		conds := Conditions(st)
		if owner := s.ownerObjects[key]; owner != nil && st.Phase == lifecycle.Gathering {
			// Name what the owner declares: a replica outside the group is the classic cause.
			msg := source.Gathering(st.Spec, st.Observed.Members, owner)
			for i := range conds {
				conds[i].Message = msg
			}
		}
		fp, _ := json.Marshal(struct {
			C []metav1.Condition
			P spv1alpha1.PodGroupPhase
		}{conds, podGroupPhase(st)})
		if s.written[key] == string(fp) {
			continue
		}
		if err := s.writeStatus(ctx, key, st, conds); err != nil {
			s.log.Error(err, "writing a group's conditions", "group", key)
			continue
		}
		s.written[key] = string(fp)
	}
}

// writeStatus writes conds on the group object in its API's form, keeping the
// transition times of conditions whose status did not change.
func (s *scheduler) writeStatus(ctx context.Context, key string, st engine.Status, conds []metav1.Condition) error {
	ref := refOfKey(key)
	api := apiOf(ref.Source)
	prev := s.previousConditions(key)
	now := metav1.NewTime(s.clock.Now())
	for _, c := range conds {
		c.LastTransitionTime = now
		meta.SetStatusCondition(&prev, c)
	}
	var patch map[string]any
	subresources := []string{}
	switch ref.Source {
	case engine.Coscheduling:
		data, err := json.Marshal(prev)
		if err != nil {
			return fmt.Errorf("encoding conditions: %w", err)
		}
		if err := s.patch(ctx, api, ref.Namespace, ref.Name, map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{StatusAnnotation: string(data)}},
		}); err != nil {
			return err
		}
		patch = map[string]any{"status": map[string]any{"phase": podGroupPhase(st)}}
		subresources = append(subresources, "status")
	case engine.Volcano:
		patch = map[string]any{"status": map[string]any{"conditions": volcanoConditions(prev)}}
	case engine.Native:
		patch = map[string]any{"status": map[string]any{"conditions": prev}}
		subresources = append(subresources, "status")
	}
	s.conditions[key] = prev
	return s.patch(ctx, api, ref.Namespace, ref.Name, patch, subresources...)
}

// previousConditions returns the conditions last written for a group.
func (s *scheduler) previousConditions(key string) []metav1.Condition {
	return append([]metav1.Condition(nil), s.conditions[key]...)
}

// volcanoConditions converts conditions to Volcano's PodGroupCondition.
func volcanoConditions(conds []metav1.Condition) []volcanov1beta1.PodGroupCondition {
	out := make([]volcanov1beta1.PodGroupCondition, 0, len(conds))
	for _, c := range conds {
		out = append(out, volcanov1beta1.PodGroupCondition{
			Type:               volcanov1beta1.PodGroupConditionType(c.Type),
			Status:             corev1.ConditionStatus(c.Status),
			LastTransitionTime: c.LastTransitionTime,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	return out
}

// patch applies a JSON merge patch to a group object.
func (s *scheduler) patch(ctx context.Context, api *groupAPI, ns, name string, patch map[string]any, subresources ...string) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding a patch of %s %s/%s: %w", api.gvr.Resource, ns, name, err)
	}
	_, err = s.dyn.Resource(api.gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", api.gvr.GroupResource(), ns, name, err)
	}
	return nil
}
