package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
)

// replaceFailed evicts the failed members that must be replaced one by one rather than
// with their whole group, as engine.Replacement decides. Each failed pod is considered
// once, after the Step that saw it.
func (v *evictor) replaceFailed() {
	for _, key := range v.mirror.takeFailed() {
		p := v.mirror.pod(key)
		if p == nil || p.Status.Phase != corev1.PodFailed || p.DeletionTimestamp != nil || !v.mirror.isOurs(p) {
			continue
		}
		gk := v.mirror.groupKeyOf(p)
		st, ok := v.eng.Group(gk)
		if !ok {
			continue
		}
		if ev, ok := engine.Replacement(st.Phase, p, gk); ok {
			v.log.Info("replacing a failed member", "group", gk, "pod", key, "reason", ev.Reason)
			if obj := v.mirror.object(gk); obj != nil {
				v.event(obj, corev1.EventTypeWarning, ev.Reason, ev.Message) // evict records it on the pod
			}
			v.evict(ev)
		}
	}
}
