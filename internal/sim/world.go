// Package sim is a discrete-event model of a GPU cluster under a scheduler: nodes, pods
// that a simulated kubelet starts, makes Ready and completes, and job controllers that
// recreate evicted pods. The scheduler under test sees only what a real one would (nodes,
// pods, group objects) and answers with binds and evictions. muster's engine is one such
// scheduler; PodByPod, a model of the default scheduler, is another. The world measures
// what the guide asks for, the same way for every scheduler.
//
// Time is simulated: nothing here reads a clock or sleeps.
package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/minheap"
)

// Scheduler is what the world drives. *engine.Engine implements it.
type Scheduler interface {
	SetNode(n *corev1.Node)
	RemoveNode(name string)
	SetPod(p *corev1.Pod, groupKey string)
	RemovePod(key string)
	SetGroup(spec engine.GroupSpec)
	RemoveGroup(key string)
	Step(now time.Time) engine.Output
}

var _ Scheduler = (*engine.Engine)(nil)

// Epoch is the simulated time at which every world starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// World is a simulated cluster driven by one scheduler.
type World struct {
	now   time.Time
	sched Scheduler
	nodes map[string]*corev1.Node
	pods  map[string]*corev1.Pod
	jobs  map[string]*Job
	// forecastSeen is when the scheduler made the last forecast notePrediction read.
	forecastSeen time.Time
	// predictor, reserver and explainer are sched as a Predictor, a Reserver and an
	// Explainer, or nil.
	predictor Predictor
	reserver  Reserver
	explainer Explainer
	// arrived are the jobs submitted since the scheduler's last Step, whose first
	// reason to wait noteFirstWaits records.
	arrived []*Job
	// unpredicted holds, by group key, the jobs notePrediction still looks for in a new
	// forecast: submitted, neither predicted nor whole yet. A forecast covers the whole
	// queue, most of it predicted by earlier forecasts already; with none left to find,
	// the forecast is not read at all.
	unpredicted map[string]*Job
	podJob      map[string]member
	events      events
	seq         int
	// Timeline collects what happened, one line each, for tests and the demo.
	Timeline []string
	// wake is the scheduler's requested wake-up.
	wake time.Time

	opts Options
	// touched holds jobs whose rates must be recomputed; accruing, jobs that hold
	// capacity (rates.held or rates.beforeReady not zero). Together they keep the
	// per-event cost independent of the job count.
	touched, accruing map[*Job]bool
	total             rates
	usefulGPUSeconds  float64
	occupancy         []Occupancy
	stall             Stall
	stalls            []Stall
	// done holds finished jobs to collect after the scheduler has seen them finish.
	done []*Job
}

// New returns an empty world at Epoch driven by sched.
func New(sched Scheduler) *World { return NewWithOptions(sched, Options{}) }

// NewWithOptions returns an empty world at Epoch driven by sched, adjusted by opts.
func NewWithOptions(sched Scheduler, opts Options) *World {
	w := &World{
		now:         Epoch,
		sched:       sched,
		nodes:       map[string]*corev1.Node{},
		pods:        map[string]*corev1.Pod{},
		jobs:        map[string]*Job{},
		podJob:      map[string]member{},
		touched:     map[*Job]bool{},
		accruing:    map[*Job]bool{},
		unpredicted: map[string]*Job{},
		opts:        opts,
	}
	w.predictor, _ = sched.(Predictor)
	w.reserver, _ = sched.(Reserver)
	w.explainer, _ = sched.(Explainer)
	return w
}

// Now returns the simulated time.
func (w *World) Now() time.Time { return w.now }

// Elapsed returns the simulated time since Epoch.
func (w *World) Elapsed() time.Duration { return w.now.Sub(Epoch) }

// AddNode adds a node.
func (w *World) AddNode(n *corev1.Node) {
	w.nodes[n.Name] = n
	w.sched.SetNode(n)
}

// Nodes returns the node names, sorted.
func (w *World) Nodes() []string {
	names := make([]string, 0, len(w.nodes))
	for n := range w.nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// logf appends a timeline line stamped with the elapsed time.
func (w *World) logf(format string, args ...any) {
	if w.opts.Quiet {
		return
	}
	w.Timeline = append(w.Timeline, fmt.Sprintf("%-7s %s", fmtDur(w.Elapsed()), fmt.Sprintf(format, args...)))
}

func fmtDur(d time.Duration) string {
	s := d.Round(time.Second).String()
	s = strings.TrimSuffix(s, "m0s")
	if strings.HasSuffix(d.Round(time.Second).String(), "m0s") {
		s += "m"
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// at schedules f at t.
func (w *World) at(t time.Time, f func()) {
	w.seq++
	w.events.Push(event{at: t, seq: w.seq, do: f})
}

// RunFor advances simulated time by d, running every event and scheduler wake-up due.
func (w *World) RunFor(d time.Duration) { w.RunUntil(w.now.Add(d)) }

// RunUntil advances simulated time to t.
func (w *World) RunUntil(t time.Time) {
	w.settle()
	for {
		next := t
		if len(w.events) > 0 && w.events[0].at.Before(next) {
			next = w.events[0].at
		}
		if wake := w.wake; !wake.IsZero() && wake.After(w.now) && wake.Before(next) {
			next = wake
		}
		if !next.After(w.now) && (len(w.events) == 0 || w.events[0].at.After(w.now)) {
			break
		}
		w.advance(next)
		for len(w.events) > 0 && !w.events[0].at.After(w.now) {
			w.events.Pop().do()
		}
		w.settle()
		if !w.now.Before(t) {
			break
		}
	}
	w.advance(t)
	w.settle()
}

// settle lets the scheduler act on what changed until it asks for nothing more.
func (w *World) settle() {
	for i := 0; i < 100; i++ {
		out := w.sched.Step(w.now)
		w.wake = out.WakeAt
		w.noteReservations()
		w.noteFirstWaits()
		if !w.opts.Quiet {
			for _, ev := range out.Events {
				w.logf("%s %s: %s", shortKey(ev.Group), ev.Reason, ev.Message)
			}
		}
		binds := out.Binds()
		if len(binds) == 0 && len(out.Evictions) == 0 {
			if len(w.done) == 0 {
				return
			}
			w.collect()
			continue
		}
		w.apply(binds, out.Evictions)
	}
}

func shortKey(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// events is a time-ordered heap of world events; seq keeps insertion order among equals.
type events = minheap.Heap[event]

type event struct {
	at  time.Time
	seq int
	do  func()
}

// Before orders events by time, then by insertion (minheap.Ordered).
func (e event) Before(o event) bool {
	if !e.at.Equal(o.at) {
		return e.at.Before(o.at)
	}
	return e.seq < o.seq
}

// gpusOf returns the GPUs a pod requests.
func gpusOf(p *corev1.Pod) int64 {
	return cluster.PodRequests(p)[GPU]
}

// GPU is the accelerator resource of simulated nodes.
const GPU corev1.ResourceName = "nvidia.com/gpu"

func gpuNode(name string, gpus int64) *corev1.Node {
	n := &corev1.Node{}
	n.Name = name
	n.Labels = map[string]string{"kubernetes.io/hostname": name}
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPU:                   *resource.NewQuantity(gpus, resource.DecimalSI),
	}
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}
