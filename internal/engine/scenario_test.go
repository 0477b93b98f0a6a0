package engine_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// TestScenarios runs the guide's validation list against the engine in a simulated
// cluster. Each file in testdata/scenarios is one scenario; regenerate expectations with
// `go test ./internal/engine -run TestScenarios -rewrite` and review the diff.
//
// Commands:
//
//	config start-timeout=5m recovery-timeout=5m max-retries=3 backoff-base=30s backoff-max=10m starvation=10m
//	nodes count=8 gpu=1 [prefix=n] [label=k=v]
//	queue name=default [gpu=8] [weight=2] [priority=1]
//	submit job=a workers=8 gpu=1 [min=8] [run=10m] [ready-after=30s] [fail-init=0,3] [fail-start=1] [queue=q] [priority=p]
//	run 10m           advance simulated time; print what happened
//	status            each job's group: phase, bound/ready, GPUs held, why it waits
//	cancel job=a | kill job=a worker=3 | node-down name=n-3
//	metrics           per job: time to ready, GPU-seconds held before ready, cleanup, held while incomplete
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		s := &scenario{cfg: engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(), StarvationThreshold: 10 * time.Minute}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d)
		})
	})
}

type scenario struct {
	cfg    engine.Config
	eng    *engine.Engine
	world  *sim.World
	seen   int
	nodeNo int
}

func (s *scenario) env() *sim.World {
	if s.world == nil {
		s.eng = engine.New(s.cfg)
		s.eng.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default"}})
		s.world = sim.New(s.eng)
	}
	return s.world
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) string {
	args := map[string]string{}
	var positional []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			positional = append(positional, a.Key)
			continue
		}
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	switch d.Cmd {
	case "config":
		s.configure(t, args)
		return ""
	case "nodes":
		return s.nodes(t, args)
	case "queue":
		q := engine.Queue{Queue: queue.Queue{Name: args["name"]}}
		if v, ok := args["gpu"]; ok {
			q.Quota = cluster.Resources{gt.GPU: int64(atoi(t, v))}
		}
		if v, ok := args["weight"]; ok {
			q.Weight = int32(atoi(t, v))
		}
		if v, ok := args["priority"]; ok {
			q.Priority = int32(atoi(t, v))
		}
		s.env()
		s.eng.SetQueue(q)
		return ""
	case "submit":
		s.env().Submit(job(t, args))
		return s.news()
	case "run":
		s.env().RunFor(duration(t, positional[0]))
		return s.news()
	case "cancel":
		s.env().Cancel(args["job"])
		return s.news()
	case "kill":
		s.env().KillPod(args["job"], atoi(t, args["worker"]))
		return s.news()
	case "node-down":
		s.env().NodeDown(args["name"])
		return s.news()
	case "status":
		return s.status()
	case "metrics":
		return s.metrics()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

func (s *scenario) configure(t *testing.T, args map[string]string) {
	p := &s.cfg.Policy
	for k, v := range args {
		switch k {
		case "start-timeout":
			p.StartTimeout = duration(t, v)
		case "recovery-timeout":
			p.RecoveryTimeout = duration(t, v)
		case "max-retries":
			p.MaxRetries = atoi(t, v)
		case "backoff-base":
			p.BackoffBase = duration(t, v)
		case "backoff-max":
			p.BackoffMax = duration(t, v)
		case "starvation":
			s.cfg.StarvationThreshold = duration(t, v)
		default:
			t.Fatalf("config: unknown key %q", k)
		}
	}
}

func (s *scenario) nodes(t *testing.T, args map[string]string) string {
	w := s.env()
	prefix := args["prefix"]
	if prefix == "" {
		prefix = "n"
	}
	count, gpus := atoi(t, args["count"]), int64(atoi(t, args["gpu"]))
	for i := 0; i < count; i++ {
		b := gt.Node(fmt.Sprintf("%s-%d", prefix, i)).GPU(gpus)
		if l, ok := args["label"]; ok {
			k, v, _ := strings.Cut(l, "=")
			b.Label(k, v)
		}
		w.AddNode(b.Obj())
	}
	return fmt.Sprintf("%d nodes", len(w.Nodes()))
}

func job(t *testing.T, args map[string]string) *sim.Job {
	j := &sim.Job{
		Name: args["job"], Workers: atoi(t, args["workers"]), GPU: int64(atoi(t, args["gpu"])),
		RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second, Queue: args["queue"],
	}
	if v, ok := args["min"]; ok {
		j.MinMember = atoi(t, v)
	}
	if v, ok := args["run"]; ok {
		j.RunFor = duration(t, v)
	}
	if v, ok := args["ready-after"]; ok {
		j.ReadyAfter = duration(t, v)
	}
	if v, ok := args["priority"]; ok {
		j.Priority = int32(atoi(t, v))
	}
	for arg, dst := range map[string]*[]int{"fail-init": &j.FailInit, "fail-start": &j.FailStart} {
		if v, ok := args[arg]; ok {
			for _, f := range strings.Split(v, ",") {
				*dst = append(*dst, atoi(t, f))
			}
		}
	}
	return j
}

// news returns the timeline lines added since the last command.
func (s *scenario) news() string {
	lines := s.world.Timeline[s.seen:]
	s.seen = len(s.world.Timeline)
	return strings.Join(lines, "\n")
}

func (s *scenario) status() string {
	var b strings.Builder
	for _, j := range s.world.Jobs() {
		st, ok := s.eng.Group(j.GroupKey())
		if !ok {
			fmt.Fprintf(&b, "%s: no group\n", j.Name)
			continue
		}
		var gpus float64
		if q, ok := st.Observed.Held[gt.GPU]; ok {
			gpus = q.AsApproximateFloat64()
		}
		fmt.Fprintf(&b, "%s: %s members=%d bound=%d ready=%d gpus-held=%.0f attempt=%d failures=%d",
			j.Name, st.Phase, st.Observed.Members, st.Observed.Bound, st.Observed.Ready, gpus, st.Attempt, st.Failures)
		if st.Waiting != "" && (st.Phase == lifecycle.Queued || st.Phase == lifecycle.Impossible) {
			fmt.Fprintf(&b, "\n  waiting: %s", st.Waiting)
		}
		if st.Phase == lifecycle.Failed {
			for _, a := range st.Attempts {
				fmt.Fprintf(&b, "\n  attempt %d: %s in %s after %s: %s", a.Number, a.Reason, a.Stage, a.EndedAt.Sub(a.AdmittedAt), a.Message)
			}
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (s *scenario) metrics() string {
	var b strings.Builder
	for _, j := range s.world.Jobs() {
		st, _ := s.eng.Group(j.GroupKey())
		ttr := "never"
		if st.EverReady {
			ttr = st.TimeToReady.String()
		}
		cleanup := "none"
		if st.CleanedUp {
			cleanup = st.Cleanup.String()
		}
		fmt.Fprintf(&b, "%s: time-to-ready=%s held-before-ready=%s cleanup=%s held-while-incomplete=%.0f GPU·s\n",
			j.Name, ttr, heldText(st.HeldBeforeReady), cleanup, j.HeldIncomplete)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func heldText[K ~string](m map[K]float64) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%g", k, m[k])
	}
	return strings.Join(parts, ",")
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: want an integer: %v", s, err)
	}
	return n
}

func duration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%q: want a duration: %v", s, err)
	}
	return d
}
