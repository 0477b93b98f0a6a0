package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/source"
)

// gpu is the resource whose held seconds `get groups` reports.
const gpu corev1.ResourceName = "nvidia.com/gpu"

// GroupRow is one line of `get groups`.
type GroupRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// API is the group's source: Coscheduling, Volcano, Native or Labels.
	API   string `json:"api"`
	Phase string `json:"phase,omitempty"`
	Queue string `json:"queue,omitempty"`
	// Ready counts members Ready or Succeeded; MinMember is the group's minimum.
	Ready     int `json:"ready"`
	Members   int `json:"members"`
	MinMember int `json:"minMember"`
	Attempt   int `json:"attempt"`
	// WaitingSince is when the group last became Unschedulable, while it still is.
	WaitingSince *metav1.Time `json:"waitingSince,omitempty"`
	// Waiting is why it waits, for -o wide.
	Waiting string `json:"waiting,omitempty"`
	// ExpectedStart is when muster expects a queued group to start, where it knows
	// (its queue's forecast); ExpectedStartUnknown says why not, for -o
	// wide.
	ExpectedStart        *metav1.Time `json:"expectedStart,omitempty"`
	ExpectedStartUnknown string       `json:"expectedStartUnknown,omitempty"`
	// GPUSeconds is what the bound members hold now, in GPU-seconds since each was bound.
	GPUSeconds int64 `json:"gpuSeconds"`
}

func newGetGroupsCmd(f *Flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "groups",
		Aliases: []string{"group", "pg"},
		Short:   "List gangs: phase, queue, members ready/min, attempt, waiting since, GPU-seconds held",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.clients()
			if err != nil {
				return err
			}
			ns, err := f.listNamespace()
			if err != nil {
				return err
			}
			rows, err := GroupRows(cmd.Context(), c, ns, time.Now())
			if err != nil {
				return err
			}
			if done, err := writeStructured(cmd.OutOrStdout(), f.Output, rows); done {
				return err
			}
			return WriteGroups(cmd.OutOrStdout(), rows, f.AllNamespaces, f.Output == "wide", time.Now())
		},
	}
	f.addListFlags(cmd)
	return cmd
}

// GroupRows reads the groups of namespace ns ("" for all): every PodGroup of the APIs
// the cluster serves, and the plain groups of pods labelled muster.dev/group.
func GroupRows(ctx context.Context, c explain.Clients, ns string, now time.Time) ([]GroupRow, error) {
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	members := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		members[source.GroupOf(p).Key()] = append(members[source.GroupOf(p).Key()], p)
	}
	var rows []GroupRow
	for _, api := range source.GroupAPIs() {
		list, err := c.Dynamic.Resource(api.Resource).Namespace(ns).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue // the API is not served
		case err != nil:
			return nil, fmt.Errorf("listing %s: %w", api.Resource.GroupResource(), err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			ref := source.Ref{Source: api.Source, Namespace: u.GetNamespace(), Name: u.GetName()}
			rows = append(rows, groupRow(ref, u.GetAnnotations(), api.Conditions(u), members[ref.Key()], now))
		}
	}
	for _, pods := range members {
		if ref := source.GroupOf(pods[0]); ref.Source == engine.Labels {
			// The record is on the lowest-named member.
			slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
			rows = append(rows, groupRow(ref, pods[0].Annotations, nil, pods, now))
		}
	}
	slices.SortFunc(rows, func(a, b GroupRow) int {
		return strings.Compare(a.Namespace+"/"+a.Name+"/"+a.API, b.Namespace+"/"+b.Name+"/"+b.API)
	})
	return rows, nil
}

// groupRow builds one row from the group's lifecycle record (annotations), its
// conditions and its member pods.
func groupRow(ref source.Ref, annotations map[string]string, conds []metav1.Condition, pods []*corev1.Pod, now time.Time) GroupRow {
	row := GroupRow{Namespace: ref.Namespace, Name: ref.Name, API: string(ref.Source)}
	if rec, ok, err := musterv1alpha1.RecordIn(annotations); err == nil && ok {
		row.Phase, row.Queue, row.MinMember, row.Attempt = rec.Phase, rec.Queue, rec.MinMember, rec.Attempt
		row.Waiting = rec.Waiting
		if rec.Phase == "Queued" {
			row.ExpectedStart, row.ExpectedStartUnknown = rec.ExpectedStart, rec.ExpectedStartUnknown
		}
	}
	if c := meta.FindStatusCondition(conds, "Unschedulable"); c != nil && c.Status == metav1.ConditionTrue {
		row.WaitingSince = &c.LastTransitionTime
	}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodFailed {
			continue
		}
		row.Members++
		if p.Status.Phase == corev1.PodSucceeded || cluster.PodReady(p) {
			row.Ready++
		}
		row.GPUSeconds += heldSeconds(p, now)
	}
	return row
}

// heldSeconds is what a bound, running member has held of the GPU since it was bound.
func heldSeconds(p *corev1.Pod, now time.Time) int64 {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded {
		return 0
	}
	n := cluster.PodRequests(p)[gpu]
	if n == 0 {
		return 0
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return n * int64(max(now.Sub(c.LastTransitionTime.Time), 0)/time.Second)
		}
	}
	return 0
}

// WriteGroups writes the rows as a table; all adds the namespace, wide the API, the
// reason the group waits and its expected start (in how long, "-" where unknown).
func WriteGroups(w io.Writer, rows []GroupRow, all, wide bool, now time.Time) error {
	tw := printers.GetNewTabWriter(w)
	head := "NAME\tPHASE\tQUEUE\tREADY\tATTEMPT\tWAITING\tGPU-SECONDS"
	if all {
		head = "NAMESPACE\t" + head
	}
	if wide {
		head += "\tAPI\tEXPECTED-START\tREASON"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		waiting := "-"
		if r.WaitingSince != nil {
			waiting = duration.HumanDuration(now.Sub(r.WaitingSince.Time))
		}
		line := strings.Join([]string{r.Name, dash(r.Phase), dash(r.Queue), fmt.Sprintf("%d/%d", r.Ready, r.MinMember),
			fmt.Sprint(r.Attempt), waiting, fmt.Sprint(r.GPUSeconds)}, "\t")
		if all {
			line = r.Namespace + "\t" + line
		}
		if wide {
			line += "\t" + r.API + "\t" + expectedStart(r, now) + "\t" + dash(r.Waiting)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}

// expectedStart renders a row's expected start as a duration from now ("now" once it
// is due), or "-".
func expectedStart(r GroupRow, now time.Time) string {
	if r.ExpectedStart == nil {
		return "-"
	}
	if d := r.ExpectedStart.Sub(now); d > 0 {
		return "in " + duration.HumanDuration(d)
	}
	return "now"
}
