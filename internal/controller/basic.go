package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// A native PodGroup with the basic policy is no gang (see source.IsBasic): each pod
// that names it is scheduled alone, as a Single group keyed by the pod's name that
// carries the PodGroup's queue, priority and per-group settings. The PodGroup itself
// is not a group of the engine's.

// basicObject returns the native PodGroup that ref names when it has the basic policy.
func (s *scheduler) basicObject(ref source.Ref) (*schedulingv1beta1.PodGroup, bool) {
	if ref.Source != engine.Native {
		return nil, false
	}
	pg, ok := s.objects[ref.Key()].(*schedulingv1beta1.PodGroup)
	return pg, ok && source.IsBasic(pg)
}

// groupRefOf returns the group p is scheduled in: the group it names, or a Single
// group of its own when that is a basic native PodGroup.
func (s *scheduler) groupRefOf(p *corev1.Pod) source.Ref {
	ref := source.GroupOf(p)
	if _, basic := s.basicObject(ref); basic {
		return source.Ref{Source: engine.Single, Namespace: p.Namespace, Name: p.Name}
	}
	return ref
}

// groupKeyOf returns the key of the group p is scheduled in.
func (s *scheduler) groupKeyOf(p *corev1.Pod) string { return s.groupRefOf(p).Key() }

// singleSpec translates a Single group: the pod's own, or, for a member of a basic
// native PodGroup, the PodGroup's translated for a group of one.
func (s *scheduler) singleSpec(p *corev1.Pod) engine.GroupSpec {
	pg, basic := s.basicObject(source.GroupOf(p))
	if !basic {
		return source.FromSingle(p, s.priority)
	}
	spec := source.FromNative(pg, s.priority)
	ref := source.Ref{Source: engine.Single, Namespace: p.Namespace, Name: p.Name}
	spec.Key, spec.Source, spec.Name, spec.MinMember = ref.Key(), ref.Source, ref.Name, 1
	return spec
}

// reapplyDeclared applies again every pod that names group key, when whether the
// group is basic changed: its pods move between the group and groups of their own.
func (s *scheduler) reapplyDeclared(ctx context.Context, key string, wasBasic bool) {
	_, basic := s.basicObject(refOfKey(key))
	if basic == wasBasic {
		return
	}
	for _, podKey := range sortedKeys(s.declared[key]) {
		s.applyPod(ctx, podKey)
	}
}

// declare indexes pod key under the group its pod names, for reapplyDeclared; "" removes it.
func (s *scheduler) declare(key, groupKey string) {
	if old, ok := s.declaredBy[key]; ok && old != groupKey {
		delete(s.declared[old], key)
		if len(s.declared[old]) == 0 {
			delete(s.declared, old)
		}
		delete(s.declaredBy, key)
	}
	if groupKey == "" {
		return
	}
	if s.declared[groupKey] == nil {
		s.declared[groupKey] = map[string]bool{}
	}
	s.declared[groupKey][key] = true
	s.declaredBy[key] = groupKey
}
