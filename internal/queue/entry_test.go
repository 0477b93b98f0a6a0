package queue

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// TestSameEntryNamesEveryField changes each field of Entry, of its Group and of a Member
// in turn and wants sameEntry to see the change: a field added to one of them and not to
// sameEntry fails here, since Push would then ignore a change of it.
func TestSameEntryNamesEveryField(t *testing.T) {
	base := func() Entry {
		return Entry{Group: placement.Group{Members: []placement.Member{{Name: "m"}}}}
	}
	if a, b := base(), base(); !sameEntry(&a, &b) {
		t.Fatal("sameEntry(a, a) = false")
	}
	check := func(what string, set func(v reflect.Value)) {
		t.Helper()
		for _, at := range []struct {
			name  string
			value func(e *Entry) reflect.Value
		}{
			{"Entry", func(e *Entry) reflect.Value { return reflect.ValueOf(e).Elem() }},
			{"Group", func(e *Entry) reflect.Value { return reflect.ValueOf(&e.Group).Elem() }},
			{"Member", func(e *Entry) reflect.Value { return reflect.ValueOf(&e.Group.Members[0]).Elem() }},
		} {
			if at.name != what {
				continue
			}
			typ := at.value(&Entry{Group: placement.Group{Members: make([]placement.Member, 1)}}).Type()
			for i := range typ.NumField() {
				if !typ.Field(i).IsExported() {
					continue // placement's own memo of what it derives (Prepare)
				}
				a, b := base(), base()
				set(at.value(&b).Field(i))
				if sameEntry(&a, &b) {
					t.Errorf("sameEntry does not compare %s.%s", what, typ.Field(i).Name)
				}
			}
		}
	}
	set := func(v reflect.Value) {
		switch v.Interface().(type) {
		case string:
			v.SetString("x")
		case int, int32, time.Duration:
			v.SetInt(1)
		case bool:
			v.SetBool(true)
		case time.Time:
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
		case []string:
			v.Set(reflect.ValueOf([]string{"x"}))
		case cluster.Resources:
			v.Set(reflect.ValueOf(cluster.Resources{corev1.ResourceCPU: 1}))
		case map[string]int:
			v.Set(reflect.ValueOf(map[string]int{"ps": 1}))
		case map[string]cluster.Resources:
			v.Set(reflect.ValueOf(map[string]cluster.Resources{"m": {corev1.ResourceCPU: 1}}))
		case placement.Group:
			v.Set(reflect.ValueOf(placement.Group{Name: "other"}))
		case placement.Topology:
			v.Set(reflect.ValueOf(placement.Topology{Required: "zone"}))
		case []placement.Member:
			v.Set(reflect.ValueOf([]placement.Member{{Name: "m"}, {Name: "n"}}))
		case *corev1.Pod:
			v.Set(reflect.ValueOf(&corev1.Pod{}))
		default:
			t.Fatalf("a field of type %s: teach this test and sameEntry to compare it", v.Type())
		}
	}
	check("Entry", set)
	check("Group", set)
	check("Member", set)
	// A member's requests given as empty are not the same as none given: placement then
	// reads the pod's.
	a, b := base(), base()
	b.Group.Members[0].Requests = cluster.Resources{}
	if sameEntry(&a, &b) {
		t.Error("sameEntry does not tell empty Member.Requests from none")
	}
}

// TestByEntryOrder checks byEntry against the order it stands for, spelled out: priority,
// higher first; never-failed before requeued; queue time plus handicap, earlier first;
// key. The handicaps make queue time alone give another order.
func TestByEntryOrder(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var items []*item
	for _, prio := range []int32{0, 5} {
		for _, requeued := range []bool{false, true} {
			for _, at := range []time.Duration{0, time.Minute} {
				for _, handicap := range []time.Duration{0, 30 * time.Second, 2 * time.Minute} {
					for _, key := range []string{"a", "b"} {
						e := Entry{Key: key, Priority: prio, Requeued: requeued, QueuedAt: t0.Add(at), Handicap: handicap}
						items = append(items, &item{Entry: e, ordered: e.QueuedAt.Add(e.Handicap)})
					}
				}
			}
		}
	}
	rank := func(it *item) []int64 {
		requeued := int64(0)
		if it.Requeued {
			requeued = 1
		}
		return []int64{-int64(it.Priority), requeued, it.QueuedAt.Add(it.Handicap).UnixNano(), int64(it.Key[0])}
	}
	for _, a := range items {
		for _, b := range items {
			if got, want := byEntry(a, b), slices.Compare(rank(a), rank(b)); got != want {
				t.Fatalf("byEntry(%+v, %+v) = %d, want %d", a.Entry, b.Entry, got, want)
			}
		}
	}
}
