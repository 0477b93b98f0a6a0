package controller

import (
	"reflect"
	"testing"
	"unsafe"
)

// notPerGroup are the scheduler's maps with string keys that are not keyed by group:
// they are emptied with the pods or queues they hold.
var notPerGroup = map[string]string{
	"pods": "pod keys", "memberOf": "pod keys", "failed": "pod keys", "recreate": "pod keys",
	"declaredBy": "pod keys", "said": "pod keys", "declared": "emptied as its pods go (declare)", "queueWritten": "Queue names",
	"queueNamespaces": "Queue names", "queueErrors": "Queue names",
}

// TestForgetGroupsEmptiesEveryPerGroupMap: after the engine drops a group, every map the
// scheduler keeps with string keys holds nothing for it, except those keyed by pod or
// Queue. A map added to the scheduler later is checked too: the test fills every
// string-keyed map by reflection, so one that forgetGroups misses fails it.
func TestForgetGroupsEmptiesEveryPerGroupMap(t *testing.T) {
	s := &scheduler{}
	s.initState()
	const key = "Labels/ns/churn"
	v := reflect.ValueOf(s).Elem()
	var maps []string
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Map || f.Type().Key() != reflect.TypeFor[string]() {
			continue
		}
		name := v.Type().Field(i).Name
		if f.IsNil() {
			t.Fatalf("initState left map %s nil", name)
		}
		m := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		m.SetMapIndex(reflect.ValueOf(key), reflect.Zero(f.Type().Elem()))
		maps = append(maps, name)
	}
	if len(maps) < 10 {
		t.Fatalf("expected the scheduler's per-group maps, found only %v", maps)
	}
	s.forgetGroups([]string{key})
	for _, name := range maps {
		m := v.FieldByName(name)
		left := m.MapIndex(reflect.ValueOf(key)).IsValid()
		switch _, exempt := notPerGroup[name]; {
		case left && !exempt:
			t.Errorf("after the group was dropped, map %s still holds it", name)
		case !left && exempt:
			t.Errorf("map %s (%s) lost an entry of that key: forgetGroups deletes by group key only", name, notPerGroup[name])
		}
	}
}

// TestTrackedGroupsCountsEveryPerGroupMap: a group held by any one per-group map counts
// as one tracked group (muster_tracked_groups), one held only by a map keyed by pod or
// Queue counts as none, and a dropped group leaves the count. Each string-keyed map of
// the scheduler is filled alone, by reflection, so a per-group map added later that
// trackedGroups does not read fails it.
func TestTrackedGroupsCountsEveryPerGroupMap(t *testing.T) {
	const key = "PodGroup/ns/churn"
	probe := &scheduler{}
	probe.initState()
	typ := reflect.TypeOf(probe).Elem()
	checked := 0
	for i := range typ.NumField() {
		ft := typ.Field(i)
		if ft.Type.Kind() != reflect.Map || ft.Type.Key() != reflect.TypeFor[string]() {
			continue
		}
		s := &scheduler{}
		s.initState()
		f := reflect.ValueOf(s).Elem().Field(i)
		m := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		m.SetMapIndex(reflect.ValueOf(key), reflect.Zero(f.Type().Elem()))
		want := 1
		if _, exempt := notPerGroup[ft.Name]; exempt {
			want = 0
		}
		if got := s.trackedGroups(); got != want {
			t.Errorf("with only map %s holding the group: expected %d tracked groups, found %d", ft.Name, want, got)
		}
		s.forgetGroups([]string{key})
		if got := s.trackedGroups(); got != 0 {
			t.Errorf("after the group held by map %s was dropped: expected 0 tracked groups, found %d", ft.Name, got)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("expected the scheduler's string-keyed maps, found only %d", checked)
	}
}
