package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// A pod of muster's whose group muster cannot schedule for a reason only the pod shows
// (it names a PodGroup that does not exist, of an API the cluster may not serve, or by
// a name no object can have) has no group object to carry a condition: muster says why
// on the pod itself, as kube-scheduler does, with PodScheduled=False and an Event.
// A pod that names groups of two APIs joins the first (see source.GroupOf) and gets an
// AmbiguousGroup Event. Each is said once per pod and reason.

// podNotes says on a pod why muster cannot schedule it, once per pod and reason. It is
// the mirror's, on the loop's goroutine; the PodScheduled writes go through conds, off
// the loop (a write the API server holds must not hold up the queue).
type podNotes struct {
	*kit
	conds *podScheduled
	// apis holds the group APIs the cluster serves.
	apis map[engine.Source]bool
	// said holds, per pod key, the reason and message last given.
	said map[string]string
	// missingSince holds, per pod key, when the pod was first found naming a group
	// object muster has not seen; due holds, per group key, when the grace of its pods
	// found so ends (see missingGrace).
	missingSince map[string]time.Time
	due          map[string]time.Time
}

// missingGrace is how long a pod names a group object muster has not seen before it is
// told GroupNotFound. A job's controller creates the PodGroup first, but muster watches
// pods and PodGroups apart, and may see the pods first: they are not told, with a
// Warning, of a PodGroup that arrives a moment later. The grace runs from when muster
// first saw the pod so, not from its creation (clocks differ, and a restarted muster
// sees every pod anew).
const missingGrace = 5 * time.Second

func newPodNotes(k *kit) *podNotes {
	return &podNotes{kit: k, apis: map[engine.Source]bool{}, said: map[string]string{},
		missingSince: map[string]time.Time{}, due: map[string]time.Time{}}
}

// forget drops what was said to a pod: it is gone, or the engine now says why its group
// waits (podScheduled.syncGroup), so that a note is said again if it applies again.
func (n *podNotes) forget(key string) {
	delete(n.said, key)
	delete(n.missingSince, key)
}

// sayMissing tells each of pods, muster's members of group key (ref), that ref's object
// does not exist (once it was missing for missingGrace) or cannot.
func (n *podNotes) sayMissing(key string, ref source.Ref, pods []*corev1.Pod) {
	reason, msg := source.ReasonInvalidGroupName, source.InvalidName(ref)
	grace := msg == ""
	if grace {
		api := source.APIOf(ref.Source)
		if api == nil {
			return
		}
		reason, msg = source.ReasonGroupNotFound, source.NotFound(ref, api.Resource.GroupVersion().String(), n.apis[ref.Source])
	}
	now := n.clock.Now()
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			continue
		}
		if grace {
			pk := podKey(p)
			since, ok := n.missingSince[pk]
			if !ok {
				since = now
				n.missingSince[pk] = now
			}
			if end := since.Add(missingGrace); now.Before(end) {
				if due, ok := n.due[key]; !ok || end.Before(due) {
					n.due[key] = end
				}
				continue
			}
		}
		n.say(key, p, reason, msg, true)
	}
}

// takeDue returns the groups whose pods' grace ended by now, to be translated again.
func (n *podNotes) takeDue(now time.Time) []string {
	var out []string
	for key, at := range n.due {
		if !now.Before(at) {
			out = append(out, key)
			delete(n.due, key)
		}
	}
	return out
}

// nextDue returns when the next grace ends, zero if none is running.
func (n *podNotes) nextDue() time.Time {
	var next time.Time
	for _, at := range n.due {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// sayAmbiguous records an AmbiguousGroup Event on p if it names groups of two APIs.
func (n *podNotes) sayAmbiguous(p *corev1.Pod) {
	if msg := source.Ambiguous(p); msg != "" {
		n.say("", p, source.ReasonAmbiguousGroup, msg, false)
	}
}

// say records an Event of reason on p and, when unscheduled is set, has the writer give
// it PodScheduled=False with that reason, as a member of group key; once per pod and
// message.
func (n *podNotes) say(key string, p *corev1.Pod, reason, msg string, unscheduled bool) {
	pk := podKey(p)
	if n.said[pk] == reason+"\x00"+msg {
		return
	}
	n.said[pk] = reason + "\x00" + msg
	n.event(p, corev1.EventTypeWarning, reason, msg)
	if unscheduled {
		n.conds.note(key, p, podCond{reason, msg})
	}
}
