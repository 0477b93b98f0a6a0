package cli

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

func gpus(n string) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
}

// TestLentByQueue: what a cohort borrows is apportioned to its queues' unused, lendable
// quota, in name order, and sums to what it borrows; a queue outside the cohort lends
// nothing.
func TestLentByQueue(t *testing.T) {
	q := func(name, cohort, quota, used, borrowed string, lendingLimit corev1.ResourceList) musterv1alpha1.Queue {
		out := musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   musterv1alpha1.QueueSpec{Cohort: cohort, Quota: gpus(quota), LendingLimit: lendingLimit},
			Status: musterv1alpha1.QueueStatus{Used: gpus(used)}}
		if borrowed != "" {
			out.Status.Borrowed = gpus(borrowed)
		}
		return out
	}
	queues := []musterv1alpha1.Queue{
		q("a", "c", "4", "1", "", gpus("1")), // 3 unused, lends at most 1
		q("b", "c", "4", "0", "", nil),       // lends the rest
		q("borrower", "c", "2", "5", "3", nil),
		q("alone", "", "8", "0", "", nil),
	}
	got := lentByQueue(queues)
	want := map[string]string{"a": "1", "b": "2"}
	for name, amount := range want {
		if v := got[name]["nvidia.com/gpu"]; v.String() != amount {
			t.Errorf("queue %s lends %s, want %s", name, v.String(), amount)
		}
	}
	if len(got) != len(want) {
		t.Errorf("lent %v, want only a and b", got)
	}
}

// TestWriteQueues: the table's columns, and "-" for what is empty.
func TestWriteQueues(t *testing.T) {
	rows := []QueueRow{{Name: "team-a", Quota: gpus("8"), Used: gpus("2"), Pending: 3, Weight: 2, Cohort: "research", Active: "True (Ready)"}}
	var b bytes.Buffer
	if err := WriteQueues(&b, rows, true); err != nil {
		t.Fatal(err)
	}
	want := "NAME     QUOTA              USED               BORROWED   LENT   PENDING   WEIGHT   COHORT     PRIORITY   ADMITTED   ACTIVE\n" +
		"team-a   nvidia.com/gpu=8   nvidia.com/gpu=2   -          -      3         2        research   0          0          True (Ready)\n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}
