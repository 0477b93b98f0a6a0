package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/scenario"
	"github.com/muster-sched/muster/internal/sim"
)

// TestScenarios runs the guide's validation list against the engine in a simulated
// cluster. Each file in testdata/scenarios is one scenario, on the commands of
// scenarios (testdata/scenarios/help.txt lists them); regenerate expectations with
// `go test ./internal/engine -run TestScenarios -rewrite` and review the diff.
func TestScenarios(t *testing.T) {
	scenarios.Run(t, "testdata/scenarios", func(*testing.T) *world {
		return &world{
			cfg:    engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(), StarvationThreshold: 10 * time.Minute},
			clock:  scenario.NewClock(sim.Epoch),
			queues: map[string]bool{},
		}
	})
}

// world is the state of one scenario file: the engine, the simulated cluster it drives
// and the scenario clock, which the cluster's time follows.
type world struct {
	cfg   engine.Config
	eng   *engine.Engine
	sim   *sim.World
	clock *scenario.Clock
	seen  int
	// queues are the queues the scenario declared (their Queue objects exist).
	queues map[string]bool
}

// env returns the simulated cluster, creating it and its engine on first use.
func (s *world) env() *sim.World {
	if s.sim == nil {
		s.eng = engine.New(s.cfg)
		s.eng.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default"}})
		s.sim = sim.New(s.eng)
	}
	return s.sim
}

var (
	jobArg  = scenario.Arg{Name: "job", Kind: scenario.String, Required: true, Value: "NAME"}
	nameArg = scenario.Arg{Name: "name", Kind: scenario.String, Required: true, Value: "NAME"}
)

func durationArgs(names ...string) []scenario.Arg {
	var args []scenario.Arg
	for _, n := range names {
		args = append(args, scenario.Arg{Name: n, Kind: scenario.Duration})
	}
	return args
}

var scenarios = scenario.New("engine",
	scenario.Command[*world]{
		Name: "config", Help: "set the lifecycle defaults and the starvation threshold, before the cluster exists",
		Args: append(durationArgs("start-timeout", "recovery-timeout", "backoff-base", "backoff-max", "starvation"),
			scenario.Arg{Name: "max-retries", Kind: scenario.Count}),
		Run: (*world).configure,
	},
	scenario.Command[*world]{
		Name: "nodes", Help: "add count nodes of gpu GPUs each, named prefix-0, prefix-1, ... (prefix n)",
		Args: []scenario.Arg{{Name: "count", Kind: scenario.Count, Required: true}, {Name: "gpu", Kind: scenario.Count, Required: true},
			{Name: "prefix", Kind: scenario.String}, {Name: "label", Kind: scenario.String, Value: "KEY=VALUE"}},
		Run: (*world).nodes,
	},
	scenario.Command[*world]{
		Name: "queue", Help: "declare a queue (its Queue object): GPU quota, weight and priority",
		Args: []scenario.Arg{nameArg, {Name: "gpu", Kind: scenario.Count}, {Name: "weight", Kind: scenario.Count}, {Name: "priority", Kind: scenario.Int}},
		Run:  (*world).queue,
	},
	scenario.Command[*world]{
		Name: "submit", Help: "submit a job of workers pods (defaults: min=workers run=10m ready-after=30s); fail-init workers never become Ready, fail-start workers fail",
		Args: []scenario.Arg{jobArg, {Name: "workers", Kind: scenario.Count, Required: true}, {Name: "gpu", Kind: scenario.Count, Required: true},
			{Name: "min", Kind: scenario.Count}, {Name: "run", Kind: scenario.Duration}, {Name: "ready-after", Kind: scenario.Duration},
			{Name: "fail-init", Kind: scenario.Counts}, {Name: "fail-start", Kind: scenario.Counts},
			{Name: "queue", Kind: scenario.String, Value: "NAME"}, {Name: "priority", Kind: scenario.Int}},
		Run: func(s *world, c *scenario.Call) (string, error) {
			s.env().Submit(jobOf(c))
			return s.news(), nil
		},
	},
	scenario.Command[*world]{
		Name: "run", Help: "advance simulated time; print what happened",
		Args: []scenario.Arg{{Name: "duration", Kind: scenario.Duration, Positional: true, Required: true}},
		Run: func(s *world, c *scenario.Call) (string, error) {
			if c.Duration("duration") < 0 {
				c.Fail("duration", fmt.Errorf("simulated time does not go back, found %s", c.Duration("duration")))
				return "", nil
			}
			w := s.env()
			w.RunUntil(s.clock.Advance(c.Duration("duration")))
			if !w.Now().Equal(s.clock.Now()) {
				return "", fmt.Errorf("the simulated cluster is at %s, the scenario clock at %s", s.clock.At(w.Now()), s.clock.At(s.clock.Now()))
			}
			return s.news(), nil
		},
	},
	scenario.Command[*world]{
		Name: "status", Help: "each job's group: phase, bound/ready, GPUs held, why it waits",
		Run: func(s *world, _ *scenario.Call) (string, error) { return s.status(), nil },
	},
	scenario.Command[*world]{
		Name: "cancel", Help: "delete a job: its pods and its group", Args: []scenario.Arg{jobArg},
		Run: func(s *world, c *scenario.Call) (string, error) {
			if err := s.hasJob(c.String("job")); err != nil {
				return "", err
			}
			s.sim.Cancel(c.String("job"))
			return s.news(), nil
		},
	},
	scenario.Command[*world]{
		Name: "kill", Help: "fail one worker's pod; its job controller replaces it",
		Args: []scenario.Arg{jobArg, {Name: "worker", Kind: scenario.Count, Required: true}},
		Run:  (*world).kill,
	},
	scenario.Command[*world]{
		Name: "node-down", Help: "mark a node NotReady and fail the pods on it", Args: []scenario.Arg{nameArg},
		Run: func(s *world, c *scenario.Call) (string, error) {
			if !slices.Contains(s.env().Nodes(), c.String("name")) {
				return "", fmt.Errorf("no node named %q", c.String("name"))
			}
			s.sim.NodeDown(c.String("name"))
			return s.news(), nil
		},
	},
	scenario.Command[*world]{
		Name: "metrics", Help: "per job: time to ready, GPU-seconds held before ready, cleanup, held while incomplete",
		Run: func(s *world, _ *scenario.Call) (string, error) { return s.metrics(), nil },
	},
	scenario.Command[*world]{
		Name: "explain", Args: []scenario.Arg{jobArg},
		Help: "what `muster explain podgroup/JOB` prints of the job's group, from the record the scheduler writes now",
		Run:  (*world).explain,
	},
)

func (s *world) configure(c *scenario.Call) (string, error) {
	if s.sim != nil {
		return "", fmt.Errorf("config after the cluster exists has no effect: put it first")
	}
	p := &s.cfg.Policy
	for name, dst := range map[string]*time.Duration{
		"start-timeout": &p.StartTimeout, "recovery-timeout": &p.RecoveryTimeout,
		"backoff-base": &p.BackoffBase, "backoff-max": &p.BackoffMax, "starvation": &s.cfg.StarvationThreshold,
	} {
		if c.Has(name) {
			*dst = c.Duration(name)
		}
	}
	if c.Has("max-retries") {
		p.MaxRetries = c.Int("max-retries")
	}
	return "", nil
}

func (s *world) nodes(c *scenario.Call) (string, error) {
	w := s.env()
	prefix := c.String("prefix")
	if prefix == "" {
		prefix = "n"
	}
	key, value, labelled := strings.Cut(c.String("label"), "=")
	if c.Has("label") && (!labelled || key == "") {
		c.Fail("label", fmt.Errorf("want KEY=VALUE, found %q", c.String("label")))
		return "", nil
	}
	for i := 0; i < c.Int("count"); i++ {
		b := gt.Node(fmt.Sprintf("%s-%d", prefix, i)).GPU(int64(c.Int("gpu")))
		if labelled {
			b.Label(key, value)
		}
		w.AddNode(b.Obj())
	}
	return fmt.Sprintf("%d nodes", len(w.Nodes())), nil
}

func (s *world) queue(c *scenario.Call) (string, error) {
	q := engine.Queue{Queue: queue.Queue{Name: c.String("name"), Priority: int32(c.Int("priority")), Weight: int32(c.Int("weight"))}}
	if c.Has("gpu") {
		q.Quota = cluster.Resources{gt.GPU: int64(c.Int("gpu"))}
	}
	s.env()
	s.eng.SetQueue(q)
	s.queues[q.Name] = true
	return "", nil
}

func jobOf(c *scenario.Call) *sim.Job {
	j := &sim.Job{
		Name: c.String("job"), Workers: c.Int("workers"), GPU: int64(c.Int("gpu")), MinMember: c.Int("min"),
		RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second, Queue: c.String("queue"),
		Priority: int32(c.Int("priority")), FailInit: c.Counts("fail-init"), FailStart: c.Counts("fail-start"),
	}
	if c.Has("run") {
		j.RunFor = c.Duration("run")
	}
	if c.Has("ready-after") {
		j.ReadyAfter = c.Duration("ready-after")
	}
	return j
}

func (s *world) kill(c *scenario.Call) (string, error) {
	name, worker := c.String("job"), c.Int("worker")
	if err := s.hasJob(name); err != nil {
		return "", err
	}
	if j := s.sim.Job(name); worker >= j.Workers {
		return "", fmt.Errorf("job %s has workers 0 to %d, found worker=%d", name, j.Workers-1, worker)
	}
	s.sim.KillPod(name, worker)
	return s.news(), nil
}

// hasJob returns an error unless the scenario submitted a job of that name.
func (s *world) hasJob(name string) error {
	if s.env().Job(name) == nil {
		return fmt.Errorf("no job named %q", name)
	}
	return nil
}

// news returns the timeline lines added since the last command.
func (s *world) news() string {
	lines := s.sim.Timeline[s.seen:]
	s.seen = len(s.sim.Timeline)
	return strings.Join(lines, "\n")
}

func (s *world) status() string {
	var b strings.Builder
	for _, j := range s.env().Jobs() {
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

func (s *world) metrics() string {
	var b strings.Builder
	for _, j := range s.env().Jobs() {
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
