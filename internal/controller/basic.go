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
// is not a group of the engine'm.

// basicObject returns the native PodGroup that ref names when it has the basic policy.
func (m *mirror) basicObject(ref source.Ref) (*schedulingv1beta1.PodGroup, bool) {
	if ref.Source != engine.Native {
		return nil, false
	}
	pg, ok := m.objects[ref.Key()].(*schedulingv1beta1.PodGroup)
	return pg, ok && source.IsBasic(pg)
}

// groupRefOf returns the group p is scheduled in: the group it names, or a Single
// group of its own when that is a basic native PodGroup.
func (m *mirror) groupRefOf(p *corev1.Pod) source.Ref {
	ref := source.GroupOf(p)
	if _, basic := m.basicObject(ref); basic {
		return source.Ref{Source: engine.Single, Namespace: p.Namespace, Name: p.Name}
	}
	return ref
}

// groupKeyOf returns the key of the group p is scheduled in.
func (m *mirror) groupKeyOf(p *corev1.Pod) string { return m.groupRefOf(p).Key() }

// reapplyDeclared applies again every pod that names group key, when whether the
// group is basic changed: its pods move between the group and groups of their own.
func (m *mirror) reapplyDeclared(ctx context.Context, key string, wasBasic bool) {
	_, basic := m.basicObject(refOfKey(key))
	if basic == wasBasic {
		return
	}
	for _, podKey := range sortedKeys(m.declared[key]) {
		m.applyPod(ctx, podKey)
	}
}

// declare indexes pod key under the group its pod names, for reapplyDeclared; "" removes it.
func (m *mirror) declare(key, groupKey string) {
	if old, ok := m.declaredBy[key]; ok && old != groupKey {
		delete(m.declared[old], key)
		if len(m.declared[old]) == 0 {
			delete(m.declared, old)
		}
		delete(m.declaredBy, key)
	}
	if groupKey == "" {
		return
	}
	if m.declared[groupKey] == nil {
		m.declared[groupKey] = map[string]bool{}
	}
	m.declared[groupKey][key] = true
	m.declaredBy[key] = groupKey
}
