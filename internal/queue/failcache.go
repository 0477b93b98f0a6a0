package queue

import "strings"

// The placement failures a pass finds are kept for the passes after it on the same
// snapshot version, under a key of the group's signature and what is closed to it.

// placedFailure returns the failure recorded for placement cache key key by an earlier
// pass on the same snapshot version (see ScheduleChanges), with the same stamp, when
// reusable.
func (m *Manager) placedFailure(key failKey, stamp string, reusable bool) (Reason, bool) {
	if !reusable {
		return Reason{}, false
	}
	f, ok := m.placed[key]
	if !ok || f.stamp != stamp {
		return Reason{}, false
	}
	return f.reason, true
}

// notePlacedFailure records a placement failure for placedFailure.
func (m *Manager) notePlacedFailure(key failKey, stamp string, reusable bool, r Reason) {
	if reusable {
		r.subject = nil
		m.placed[key] = placedFailure{stamp: stamp, reason: r}
	}
}

// failKey names what a placement failure holds for: the groups of a placement signature
// with the given nodes closed to them (closedNodes keys, joined when several). A struct
// rather than one string: decide looks a failure up for every group it walks past, and
// the string was made anew each time.
type failKey struct {
	signature, closed string
}

// failureKey is the failKey of signature with closed closed to it.
func failureKey(signature string, closed []closedNodes) failKey {
	k := failKey{signature: signature}
	for i, c := range closed {
		if i > 0 {
			k.closed += "\x00"
		}
		k.closed += c.key
	}
	return k
}

// placedFailure is a placement failure recorded on the snapshot version
// Manager.placedVersion, with the nodes closed to the group named by stamp.
type placedFailure struct {
	stamp  string
	reason Reason
}

// placedStamp names the nodes closed to a group, for placedFailure, and reports whether
// a failure may be reused or recorded at this point of the pass: the snapshot is as the
// caller gave it (no group admitted yet) and no node is closed but the starving group's
// reservation's.
func (p *pass) placedStamp(closed []closedNodes) (string, bool) {
	if !p.versioned || len(p.res.Admitted) > 0 {
		return "", false
	}
	switch {
	case len(closed) == 0:
		return "", true
	case len(closed) == 1 && !closed[0].preemption && p.m.reserve != nil:
		// A reservation is replaced, never changed: its stamp is made once.
		if m := p.m; m.stamped != m.reserve {
			m.stamped, m.stampText = m.reserve, m.reserve.stamp()
		}
		return p.m.stampText, true
	}
	return "", false
}

// stamp names the reservation's holder, nodes and shares.
func (r *Reservation) stamp() string {
	var b strings.Builder
	b.WriteString(r.Key)
	for _, n := range r.Nodes {
		b.WriteByte(0)
		b.WriteString(n)
		b.WriteByte('=')
		r.Shares[n].Render(&b)
	}
	return b.String()
}
