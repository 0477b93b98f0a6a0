// Package demo submits the guide's two-jobs example to a live cluster (normally muster's
// sandbox) as real PodGroups and pods, prints a timeline of who is bound and who holds
// what, and checks the outcome gang scheduling promises: one job whole, the other holding
// nothing, then the second whole after the first finishes.
package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
)

// Options configure the demo.
type Options struct {
	// Workers is the size of each job; the cluster should have exactly that many GPUs.
	Workers int
	// RunFor is how long each job trains once whole (the sandbox's run-for annotation).
	RunFor time.Duration
	// Timeout bounds the whole demo.
	Timeout time.Duration
	// SchedulerName is muster's schedulerName.
	SchedulerName string
}

// DefaultOptions is the example of the design: two jobs of 8 one-GPU workers, 15 s each.
func DefaultOptions() Options {
	return Options{Workers: 8, RunFor: 15 * time.Second, Timeout: 3 * time.Minute, SchedulerName: "muster"}
}

const gpu corev1.ResourceName = "nvidia.com/gpu"

// Run submits the two jobs, prints the timeline to out and returns nil only when the
// outcome is right.
func Run(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, out io.Writer, opts Options) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	ns := "muster-demo-" + rand.String(4)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	defer cleanUp(kube, dyn, ns, out)
	jobs := []string{"job-a", "job-b"}
	for _, j := range jobs {
		if err := createPodGroup(ctx, dyn, ns, j, opts.Workers); err != nil {
			return err
		}
	}
	// Two operators reconciling at once: the pods of the two jobs arrive interleaved.
	for i := 0; i < opts.Workers; i++ {
		for _, j := range jobs {
			if _, err := kube.CoreV1().Pods(ns).Create(ctx, worker(ns, j, i, opts), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pod %s-%d: %w", j, i, err)
			}
		}
	}
	fmt.Fprintf(out, "Submitted %s and %s to namespace %s: two PodGroups (minMember %d) and %d one-GPU pods, interleaved.\n",
		jobs[0], jobs[1], ns, opts.Workers, 2*opts.Workers)
	return watch(ctx, kube, ns, jobs, out, opts)
}

// cleanUp deletes what the demo created, on a context of its own (the demo's may have
// expired): the pods, the PodGroups, then the namespace, which a cluster without a
// namespace controller (the sandbox) would not empty by itself. Failures are reported
// to out and do not change the demo's outcome.
func cleanUp(kube kubernetes.Interface, dyn dynamic.Interface, ns string, out io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := metav1.ListOptions{}
	if err := kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		fmt.Fprintf(out, "cleaning up: deleting the pods of namespace %s: %v\n", ns, err)
	}
	podGroups := dyn.Resource(spv1alpha1.GroupVersion.WithResource("podgroups")).Namespace(ns)
	if err := podGroups.DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		fmt.Fprintf(out, "cleaning up: deleting the PodGroups of namespace %s: %v\n", ns, err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		fmt.Fprintf(out, "cleaning up: deleting namespace %s: %v\n", ns, err)
	}
}

func createPodGroup(ctx context.Context, dyn dynamic.Interface, ns, name string, minMember int) error {
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": spv1alpha1.GroupVersion.String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"minMember": int64(minMember)},
	}}
	_, err := dyn.Resource(spv1alpha1.GroupVersion.WithResource("podgroups")).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PodGroup %s/%s: %w", ns, name, err)
	}
	return nil
}

func worker(ns, job string, i int, opts Options) *corev1.Pod {
	one := resource.MustParse("1")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-worker-%d", job, i), Namespace: ns,
			Labels:      map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: job},
			Annotations: map[string]string{"sandbox.muster.dev/run-for": opts.RunFor.String()},
		},
		Spec: corev1.PodSpec{
			SchedulerName: opts.SchedulerName,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "trainer", Image: "registry.example/trainer:v1",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{gpu: one, corev1.ResourceCPU: resource.MustParse("1")},
					Limits:   corev1.ResourceList{gpu: one},
				},
			}},
		},
	}
}

// jobState is one job's pods at one moment.
type jobState struct {
	bound, ready, succeeded int
}

func (s jobState) whole(n int) bool { return s.bound == n }
func (s jobState) done(n int) bool  { return s.succeeded == n }

// holding is the GPUs a job's running (bound, unfinished) pods hold.
func (s jobState) holding() int { return s.bound - s.succeeded }

func (s jobState) String() string {
	return fmt.Sprintf("%d bound, %d Ready, %d done, holds %d GPUs", s.bound, s.ready, s.succeeded, s.holding())
}

func states(ctx context.Context, kube kubernetes.Interface, ns string, jobs []string) (map[string]jobState, error) {
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := map[string]jobState{}
	for _, p := range pods.Items {
		job := p.Labels[musterv1alpha1.CoschedulingPodGroupLabel]
		s := out[job]
		if p.Spec.NodeName != "" {
			s.bound++
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			s.succeeded++
			s.ready++
		case cluster.PodReady(&p):
			s.ready++
		}
		out[job] = s
	}
	return out, nil
}

// watch samples the pods until both jobs are done, printing each change, and checks that
// a job never holds GPUs while the other is incomplete and holds some too.
func watch(ctx context.Context, kube kubernetes.Interface, ns string, jobs []string, out io.Writer, opts Options) error {
	began := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	n := opts.Workers
	var last, first string
	var heldIncomplete float64
	prev, prevSt := began, map[string]jobState{}
	for {
		st, err := states(ctx, kube, ns, jobs)
		if err != nil {
			return err
		}
		now := time.Now()
		// An interval counts as held by an incomplete job when both samples that bound
		// it show the job incomplete and holding GPUs, for the GPUs held at both. A
		// sample that lands between the binds of one group (they are concurrent, not
		// atomic) does not charge the whole interval to a state that lasted a moment.
		for _, j := range jobs {
			a, b := prevSt[j], st[j]
			if a.holding() > 0 && !a.whole(n) && b.holding() > 0 && !b.whole(n) {
				heldIncomplete += float64(min(a.holding(), b.holding())) * now.Sub(prev).Seconds()
			}
		}
		prev, prevSt = now, st
		line := fmt.Sprintf("%s: %s | %s: %s", jobs[0], st[jobs[0]], jobs[1], st[jobs[1]])
		if line != last {
			fmt.Fprintf(out, "  %6.1fs  %s\n", now.Sub(began).Seconds(), line)
			last = line
		}
		if err := check(st, jobs, n, &first); err != nil {
			return err
		}
		if st[jobs[0]].done(n) && st[jobs[1]].done(n) {
			fmt.Fprintf(out, "Outcome: %s ran whole first while the other held nothing; then the other ran whole. GPU-seconds held by incomplete groups: %.1f.\n", first, heldIncomplete)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the demo did not finish within %s: last state %s", opts.Timeout, line)
		case <-tick.C:
		}
	}
}

// check fails when both jobs hold GPUs at once while one of them is incomplete: the
// partial allocation gang scheduling exists to prevent. It records which job ran first.
func check(st map[string]jobState, jobs []string, n int, first *string) error {
	a, b := st[jobs[0]], st[jobs[1]]
	if a.holding() > 0 && b.holding() > 0 && (!a.whole(n) || !b.whole(n)) {
		return fmt.Errorf("both jobs hold GPUs and one is incomplete: %s: %s; %s: %s", jobs[0], a, jobs[1], b)
	}
	if *first == "" {
		for _, j := range jobs {
			if st[j].whole(n) {
				*first = j
			}
		}
	}
	return nil
}
