package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-sched/muster/internal/source"
)

// When a member with a controller owner fails, the owner decides what happens next: a
// batch Job with backoffLimit left creates a replacement, one past its backoffLimit fails
// for good and creates nothing more. muster learns the owner's verdict by reading it
// again, past the owner cache, every ownerRecheckEvery for ownerRecheckFor after the
// failure (the Job controller sets its Failed condition within seconds); a failed owner
// fails the group at once (GroupSpec.OwnerFailed) instead of leaving it to wait out its
// start or recovery timeout and retries for members that will not come. Reading rather
// than watching keeps muster to the get it has on owners, and costs nothing while no
// member fails.
const (
	ownerRecheckEvery = 2 * time.Second
	ownerRecheckFor   = time.Minute
)

// recheck is when to read a group's owner again, and until when.
type recheck struct {
	next, until time.Time
}

// watchOwner notes that member p of group gk failed: if a controller owns it, its owner
// is read again until ownerRecheckFor from now.
func (s *scheduler) watchOwner(gk string, p *corev1.Pod) {
	if p.Status.Phase != corev1.PodFailed || metav1.GetControllerOf(p) == nil {
		return
	}
	now := s.clock.Now()
	r := s.rechecks[gk]
	if r == nil {
		r = &recheck{next: now.Add(ownerRecheckEvery)}
		s.rechecks[gk] = r
	}
	r.until = now.Add(ownerRecheckFor)
}

// recheckOwners forgets the cached owner of each group due for a recheck and marks the
// group for translation, which reads the owner again. A group whose owner failed, or
// that is gone, is not rechecked any more.
func (s *scheduler) recheckOwners() {
	now := s.clock.Now()
	for gk, r := range s.rechecks {
		if s.members[gk] == nil || source.OwnerFailure(s.ownerObjects[gk]) != "" || now.After(r.until) {
			delete(s.rechecks, gk)
			continue
		}
		if !r.next.After(now) {
			if owner := s.ownerObjects[gk]; owner != nil {
				delete(s.owners, types.NamespacedName{Namespace: owner.GetNamespace(), Name: string(owner.GetUID())})
			}
			s.specDirty[gk] = true
			r.next = now.Add(ownerRecheckEvery)
		}
	}
}

// nextRecheck returns when the next recheck is due, or zero if none is.
func (s *scheduler) nextRecheck() time.Time {
	var next time.Time
	for _, r := range s.rechecks {
		if next.IsZero() || r.next.Before(next) {
			next = r.next
		}
	}
	return next
}
