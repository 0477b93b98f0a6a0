package forecast

import (
	"fmt"
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
	left  levels
	// peak is the most that will ever be left: now, with every release.
	peak []int64
}

// addQuotas adds the queues' quotas, and the times their releases give some back, to
// the profile.
func (p *profile) addQuotas(quotas []Quota) {
	for _, q := range quotas {
		qp := &quotaProfile{queue: q.Queue, dims: slices.Sorted(maps.Keys(q.Free))}
		vec := func(r cluster.Resources) []int64 {
			v := make([]int64, len(qp.dims))
			for i, name := range qp.dims {
				v[i] = r[name]
			}
			return v
		}
		qp.left = levels{d: len(qp.dims), at: []int64{p.now}, vals: vec(q.Free)}
		qp.peak = slices.Clone(qp.left.vals)
		for _, r := range q.Releases {
			delta := vec(r.Resources)
			addTo(qp.peak, delta, 1)
			at := r.At.UnixNano()
			qp.left.add(at, delta)
			if at > p.now {
				p.total.split(at)
			}
		}
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

// beyondPeak says why charge never fits the quota, or is empty; a nil quota limits
// nothing.
func (qp *quotaProfile) beyondPeak(charge []int64) string {
	if qp == nil {
		return ""
	}
	for i, v := range charge {
		if v > qp.peak[i] {
			return fmt.Sprintf("only %s of queue %s's quota of %s is left or expected to be given back, "+
				"and it charges %s: groups with no expected run time hold the rest",
				cluster.Format(qp.dims[i], qp.peak[i]), qp.queue, qp.dims[i], cluster.Format(qp.dims[i], v))
		}
	}
	return ""
}

// fitsQuota reports whether need fits what is left of the quota throughout [t, end);
// dst is scratch of the quota's length. A nil quota limits nothing.
func (qp *quotaProfile) fitsQuota(need []int64, t, end int64, dst []int64) bool {
	if qp == nil {
		return true
	}
	qp.left.minIn(t, end, dst)
	return covers(dst, need)
}

// takeQuota takes need from the quota during [t, end).
func (qp *quotaProfile) takeQuota(need []int64, t, end int64) {
	if qp == nil {
		return
	}
	qp.left.take(t, end, need)
}
