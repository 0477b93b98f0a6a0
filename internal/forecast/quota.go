package forecast

import (
	"cmp"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// Quota is a queue's quota as the forecast sees it: what is left of it now, for each
// resource it limits, and what its admitted groups give back when they are expected to
// end. A group whose queue has one starts only when its charge fits what is left.
type Quota struct {
	Queue string
	// Free is the quota less what the queue's admitted groups hold, for each resource
	// the quota lists, zero included; a resource it does not list is not limited.
	Free     cluster.Resources
	Releases []QuotaRelease
}

// QuotaRelease is a charge an admitted group gives back to its queue's quota when it is
// expected to end.
type QuotaRelease struct {
	At        time.Time
	Resources cluster.Resources
}

// quotaProfile is what is left of one queue's quota over time.
type quotaProfile struct {
	queue string
	dims  []corev1.ResourceName
	left  *nodeProfile
	// peak is the most that will ever be left: now, with every release.
	peak []int64
}

// addQuotas adds the queues' quotas, and the times their releases give some back, to
// the profile.
func (p *profile) addQuotas(quotas []Quota) {
	for _, q := range quotas {
		qp := &quotaProfile{queue: q.Queue, dims: slices.Sorted(maps.Keys(q.Free)), left: &nodeProfile{name: q.Queue}}
		vec := func(r cluster.Resources) []int64 {
			v := make([]int64, len(qp.dims))
			for i, name := range qp.dims {
				v[i] = r[name]
			}
			return v
		}
		qp.left.free = vec(q.Free)
		qp.peak = slices.Clone(qp.left.free)
		for _, r := range q.Releases {
			delta := vec(r.Resources)
			addTo(qp.peak, delta, 1)
			if at := r.At.UnixNano(); at > p.now {
				qp.left.steps = append(qp.left.steps, step{at: at, delta: delta})
				p.addTime(at)
			} else {
				addTo(qp.left.free, delta, 1)
			}
		}
		slices.SortStableFunc(qp.left.steps, func(a, b step) int { return cmp.Compare(a.at, b.at) })
		if p.quotas == nil {
			p.quotas = map[string]*quotaProfile{}
		}
		p.quotas[q.Queue] = qp
	}
}

// charge is g's charge in its queue's quota dimensions, or nil when the queue has no
// quota the forecast knows.
func (p *profile) charge(g Group) (*quotaProfile, []int64) {
	qp := p.quotas[g.Queue]
	if qp == nil {
		return nil, nil
	}
	need := make([]int64, len(qp.dims))
	for i, name := range qp.dims {
		need[i] = g.Charge[name]
	}
	return qp, need
}

// fitsQuota reports whether need fits what is left of the quota throughout [t, end);
// a nil quota limits nothing.
func (qp *quotaProfile) fitsQuota(need []int64, t, end int64, dst, scratch []int64) bool {
	if qp == nil {
		return true
	}
	qp.left.availIn(t, end, dst, scratch)
	return covers(dst, need)
}

// takeQuota takes need from the quota during [t, end).
func (qp *quotaProfile) takeQuota(need []int64, t, end int64) {
	if qp == nil {
		return
	}
	neg := make([]int64, len(need))
	addTo(neg, need, -1)
	qp.left.insert(step{at: t, delta: neg})
	if end != never {
		qp.left.insert(step{at: end, delta: slices.Clone(need)})
	}
}
