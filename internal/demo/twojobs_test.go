package demo_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/muster-sched/muster/internal/demo"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	seed, err := sandbox.Preset(sandbox.PresetSeed, sandbox.PresetOptions{})
	if err != nil {
		panic(err)
	}
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{Cluster: seed}))
}

// TestTwoJobsOnTheSandbox runs the demo against muster (a `muster serve` process)
// on the seed cluster: it must
// succeed, and its timeline must show one job whole while the other holds nothing.
func TestTwoJobsOnTheSandbox(t *testing.T) {
	env := sandboxtest.Shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env.StartMuster(t, sandboxtest.MusterOptions{}) // `muster serve` as deployed
	opts := demo.DefaultOptions()
	opts.RunFor = 4 * time.Second
	var out bytes.Buffer
	if err := demo.Run(ctx, env.Kube, env.Dynamic, &out, opts); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	if !strings.Contains(out.String(), "GPU-seconds held by incomplete groups: 0.0") {
		t.Errorf("expected no GPU held by an incomplete group:\n%s", out.String())
	}
}

// TestCheckCatchesPartialGroups runs the demo with no scheduler but a pod-by-pod binder
// of its own, which binds half of each job: the demo must fail.
func TestCheckCatchesPartialGroups(t *testing.T) {
	env := sandboxtest.Shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	binder := make(chan struct{})
	go func() {
		defer close(binder)
		bindHalf(ctx, t, env)
	}()
	// The binder logs through t, so it must have stopped before the test returns.
	defer func() {
		cancel()
		<-binder
	}()
	opts := demo.DefaultOptions()
	opts.SchedulerName, opts.Timeout = "someone-else", 30*time.Second
	var out bytes.Buffer
	err := demo.Run(ctx, env.Kube, env.Dynamic, &out, opts)
	if err == nil || !strings.Contains(err.Error(), "both jobs hold GPUs and one is incomplete") {
		t.Fatalf("want the demo to fail on partial groups, got %v\n%s", err, out.String())
	}
}

// bindHalf binds pods one by one in the order they were created (interleaved: worker 0
// of each job, then worker 1, ...), one per node, as a pod-by-pod scheduler would: each
// job ends up with half of the GPUs.
func bindHalf(ctx context.Context, t *testing.T, env *sandboxtest.Env) {
	node := 0
	for ctx.Err() == nil && node < 8 {
		pods, err := env.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		var pending []*corev1.Pod
		for i := range pods.Items {
			if p := &pods.Items[i]; p.Spec.SchedulerName == "someone-else" && p.Spec.NodeName == "" {
				pending = append(pending, p)
			}
		}
		slices.SortFunc(pending, func(a, b *corev1.Pod) int {
			ia, ib := a.Name[strings.LastIndexByte(a.Name, '-')+1:], b.Name[strings.LastIndexByte(b.Name, '-')+1:]
			if c := cmp.Compare(len(ia), len(ib)); c != 0 {
				return c
			}
			if c := strings.Compare(ia, ib); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, p := range pending {
			if node >= 8 {
				break
			}
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
				Target: corev1.ObjectReference{Kind: "Node", Name: fmt.Sprintf("gpu-%d", node)}}
			if err := env.Kube.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
				if ctx.Err() == nil {
					t.Logf("binding %s: %v", p.Name, err)
				}
				continue
			}
			node++
		}
		time.Sleep(100 * time.Millisecond)
	}
}
