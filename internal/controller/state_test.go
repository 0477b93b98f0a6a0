package controller

import (
	"reflect"
	"testing"
	"unsafe"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// notPerGroup are the owners' maps with string keys that are not keyed by group, or
// that are emptied by the work they hold rather than with their group.
var notPerGroup = map[string]string{
	"mirror.pods": "pod keys", "mirror.memberOf": "pod keys", "mirror.failed": "pod keys",
	"mirror.declaredBy": "pod keys", "mirror.declared": "emptied as its pods go (declare)",
	"evictor.recreate": "pod keys", "evictor.pending": "pod keys, each dropped once sent", "podScheduled.notes": "pod keys, each dropped once written",
	"queueBook.handed": "Queue names", "queueBook.namespaces": "Queue names", "queueBook.errors": "Queue names",
	"claimReleaser.pending": "group keys, each dropped once sent: a release is sent after its group is gone",
}

// wiredScheduler returns a scheduler with its owners made and empty, as Start makes them.
func wiredScheduler() *scheduler {
	s := &scheduler{kit: &kit{cfg: musterv1alpha1.DefaultConfiguration()}}
	s.wire(signer{}, nil, nil)
	return s
}

// ownerMap is one string-keyed map of an owner, found by reflection.
type ownerMap struct {
	name string // owner type.field
	m    reflect.Value
}

// stringKeyedMaps returns every string-keyed map of every owner of s, so that a map an
// owner gains later is checked too.
func stringKeyedMaps(t *testing.T, s *scheduler) []ownerMap {
	t.Helper()
	var out []ownerMap
	sv := reflect.ValueOf(s).Elem()
	for i := range sv.NumField() {
		f := sv.Field(i)
		if f.Kind() != reflect.Pointer || f.Elem().Kind() != reflect.Struct || sv.Type().Field(i).Anonymous {
			continue
		}
		ov := f.Elem()
		if ov.Type().PkgPath() != sv.Type().PkgPath() || ov.Type() == reflect.TypeFor[changes]() {
			continue // the engine's own state (its tests check it), and the batch of changes
		}
		for j := range ov.NumField() {
			mf := ov.Field(j)
			if mf.Kind() != reflect.Map || mf.Type().Key() != reflect.TypeFor[string]() {
				continue
			}
			name := ov.Type().Name() + "." + ov.Type().Field(j).Name
			if mf.IsNil() {
				t.Fatalf("the owner left map %s nil", name)
			}
			out = append(out, ownerMap{name, reflect.NewAt(mf.Type(), unsafe.Pointer(mf.UnsafeAddr())).Elem()})
		}
	}
	if len(out) < 15 {
		t.Fatalf("expected the owners' string-keyed maps, found only %d", len(out))
	}
	return out
}

// TestForgetGroupsEmptiesEveryPerGroupMap: after the engine drops a group, every map an
// owner keeps with string keys holds nothing for it, except those keyed by pod or Queue.
// The test fills every string-keyed map of every owner by reflection, so a map that
// its owner's forget misses fails it.
func TestForgetGroupsEmptiesEveryPerGroupMap(t *testing.T) {
	s := wiredScheduler()
	const key = "Labels/ns/churn"
	maps := stringKeyedMaps(t, s)
	for _, m := range maps {
		m.m.SetMapIndex(reflect.ValueOf(key), reflect.Zero(m.m.Type().Elem()))
	}
	delete(s.mirror.objects, key) // the group is gone: no object, no member
	delete(s.mirror.members, key)
	s.forgetGroups([]string{key})
	for _, m := range maps {
		left := m.m.MapIndex(reflect.ValueOf(key)).IsValid()
		switch _, exempt := notPerGroup[m.name]; {
		case left && !exempt:
			t.Errorf("after the group was dropped, map %s still holds it", m.name)
		case !left && exempt && m.name != "mirror.objects" && m.name != "mirror.members":
			t.Errorf("map %s (%s) lost an entry of that key: forgetGroups deletes by group key only", m.name, notPerGroup[m.name])
		}
	}
}

// TestTrackedGroupsCountsEveryPerGroupMap: a group held by any one per-group map counts
// as one tracked group (muster_tracked_groups), one held only by a map keyed by pod or
// Queue counts as none, and a dropped group leaves the count. Each string-keyed map of
// every owner is filled alone, by reflection.
func TestTrackedGroupsCountsEveryPerGroupMap(t *testing.T) {
	const key = "PodGroup/ns/churn"
	n := len(stringKeyedMaps(t, wiredScheduler()))
	for i := range n {
		s := wiredScheduler()
		m := stringKeyedMaps(t, s)[i]
		m.m.SetMapIndex(reflect.ValueOf(key), reflect.Zero(m.m.Type().Elem()))
		want := 1
		if _, exempt := notPerGroup[m.name]; exempt {
			want = 0
		}
		if got := s.trackedGroups(); got != want {
			t.Errorf("with only map %s holding the group: expected %d tracked groups, found %d", m.name, want, got)
		}
		if m.name == "mirror.objects" || m.name == "mirror.members" {
			m.m.SetMapIndex(reflect.ValueOf(key), reflect.Value{}) // gone, for forgetGroups
		}
		s.forgetGroups([]string{key})
		if _, exempt := notPerGroup[m.name]; !exempt {
			if got := s.trackedGroups(); got != 0 {
				t.Errorf("after the group held by map %s was dropped: expected 0 tracked groups, found %d", m.name, got)
			}
		}
	}
}
