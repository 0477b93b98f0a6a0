package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
)

// QueueRow is one line of `get queues`.
type QueueRow struct {
	Name     string              `json:"name"`
	Quota    corev1.ResourceList `json:"quota,omitempty"`
	Used     corev1.ResourceList `json:"used,omitempty"`
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`
	// Lent is the part of the queue's unused quota that other queues of its cohort hold.
	Lent     corev1.ResourceList `json:"lent,omitempty"`
	Pending  int32               `json:"pendingGroups"`
	Admitted int32               `json:"admittedGroups"`
	Weight   int32               `json:"weight"`
	Priority int32               `json:"priority"`
	Cohort   string              `json:"cohort,omitempty"`
	// Active is the status and reason of the Queue's Active condition.
	Active string `json:"active,omitempty"`
}

func newGetQueuesCmd(f *Flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "queues",
		Aliases: []string{"queue", "mq"},
		Short:   "List the Queues: quota, used, borrowed, lent, pending groups, weight, cohort",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.clients()
			if err != nil {
				return err
			}
			rows, err := QueueRows(cmd.Context(), c)
			if err != nil {
				return err
			}
			if done, err := writeStructured(cmd.OutOrStdout(), f.Output, rows); done {
				return err
			}
			return WriteQueues(cmd.OutOrStdout(), rows, f.Output == "wide")
		},
	}
	f.addListFlags(cmd)
	return cmd
}

// QueueRows reads every Queue and computes its row.
func QueueRows(ctx context.Context, c explain.Clients) ([]QueueRow, error) {
	list, err := c.Dynamic.Resource(musterv1alpha1.GroupVersion.WithResource("queues")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Queues: %w", err)
	}
	queues := make([]musterv1alpha1.Queue, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &queues[i]); err != nil {
			return nil, fmt.Errorf("decoding Queue %s: %w", list.Items[i].GetName(), err)
		}
	}
	slices.SortFunc(queues, func(a, b musterv1alpha1.Queue) int { return strings.Compare(a.Name, b.Name) })
	lent := lentByQueue(queues)
	rows := make([]QueueRow, 0, len(queues))
	for _, q := range queues {
		row := QueueRow{Name: q.Name, Quota: q.Spec.Quota, Used: q.Status.Used, Borrowed: q.Status.Borrowed, Lent: lent[q.Name],
			Pending: q.Status.PendingGroups, Admitted: q.Status.AdmittedGroups, Weight: q.Spec.Weight, Priority: q.Spec.Priority, Cohort: q.Spec.Cohort}
		if c := meta.FindStatusCondition(q.Status.Conditions, "Active"); c != nil {
			row.Active = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// lentByQueue apportions what each cohort's queues borrow to the queues that lend it:
// each resource a cohort borrows is taken from its queues' unused, lendable quota in name
// order. The sum over a cohort's queues is what it borrows.
func lentByQueue(queues []musterv1alpha1.Queue) map[string]corev1.ResourceList {
	borrowed := map[string]corev1.ResourceList{} // by cohort
	for _, q := range queues {
		if q.Spec.Cohort == "" {
			continue
		}
		for name, v := range q.Status.Borrowed {
			sum := borrowed[q.Spec.Cohort][name]
			sum.Add(v)
			if borrowed[q.Spec.Cohort] == nil {
				borrowed[q.Spec.Cohort] = corev1.ResourceList{}
			}
			borrowed[q.Spec.Cohort][name] = sum
		}
	}
	out := map[string]corev1.ResourceList{}
	for _, q := range queues {
		left := borrowed[q.Spec.Cohort]
		for name, quota := range q.Spec.Quota {
			need, ok := left[name]
			if !ok || need.Sign() <= 0 {
				continue
			}
			free := quota.DeepCopy()
			if used, ok := q.Status.Used[name]; ok {
				free.Sub(used)
			}
			if limit, ok := q.Spec.LendingLimit[name]; ok && limit.Cmp(free) < 0 {
				free = limit.DeepCopy()
			}
			if free.Sign() <= 0 {
				continue
			}
			give := minQuantity(free, need)
			need.Sub(give)
			left[name] = need
			if out[q.Name] == nil {
				out[q.Name] = corev1.ResourceList{}
			}
			out[q.Name][name] = give
		}
	}
	return out
}

func minQuantity(a, b resource.Quantity) resource.Quantity {
	if a.Cmp(b) < 0 {
		return a.DeepCopy()
	}
	return b.DeepCopy()
}

// WriteQueues writes the rows as a table; wide adds priority, admitted groups and the
// Active condition.
func WriteQueues(w io.Writer, rows []QueueRow, wide bool) error {
	tw := printers.GetNewTabWriter(w)
	head := "NAME\tQUOTA\tUSED\tBORROWED\tLENT\tPENDING\tWEIGHT\tCOHORT"
	if wide {
		head += "\tPRIORITY\tADMITTED\tACTIVE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		line := strings.Join([]string{r.Name, resources(r.Quota), resources(r.Used), resources(r.Borrowed), resources(r.Lent),
			fmt.Sprint(r.Pending), fmt.Sprint(r.Weight), dash(r.Cohort)}, "\t")
		if wide {
			line += fmt.Sprintf("\t%d\t%d\t%s", r.Priority, r.Admitted, dash(r.Active))
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}

// resources renders a resource list as name=amount pairs, sorted, or "-".
func resources(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(l))
	for name, v := range l {
		parts = append(parts, fmt.Sprintf("%s=%s", name, v.String()))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
