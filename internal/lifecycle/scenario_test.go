package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/muster-sched/muster/internal/scenario"
)

// epoch is the scenario clock's origin, and the start of the other tests' clocks.
var epoch = scenario.Epoch

// scenarioSuite is the state of one scenario file: a group, its policy and a clock.
type scenarioSuite struct {
	s      State
	p      Policy
	clock  *scenario.Clock
	hasNew bool
}

// TestScenarios runs the scenario files in testdata/scenarios/ on the commands of
// scenarios (testdata/scenarios/help lists them). Regenerate the expected output with
// `go test ./internal/lifecycle -run TestScenarios -rewrite` and review the diff.
func TestScenarios(t *testing.T) {
	scenarios.Run(t, "testdata/scenarios", func(*testing.T) *scenarioSuite {
		return &scenarioSuite{p: DefaultPolicy(), clock: scenario.NewClock(epoch)}
	})
}

// counts are the observe command's count arguments and the fields they set.
var counts = []string{"members", "bound", "ready", "succeeded", "failed", "placed", "placed-failed"}

var scenarios = scenario.New("lifecycle",
	scenario.Command[*scenarioSuite]{
		Name: "new", Args: []scenario.Arg{{Name: "min", Kind: scenario.Int, Required: true}},
		Help: "start a group of minMember min at the current time",
		Run: func(sc *scenarioSuite, c *scenario.Call) (string, error) {
			s, err := New(c.Int("min"), sc.clock.Now())
			if err != nil {
				return "", err
			}
			sc.s, sc.hasNew = s, true
			return sc.summary(nil), nil
		},
	},
	scenario.Command[*scenarioSuite]{
		Name: "policy", Args: policyArgs(),
		Help: "set the policy: the defaults with the given settings",
		Run: func(sc *scenarioSuite, c *scenario.Call) (string, error) {
			p, err := policyOf(c)
			if err != nil {
				return "", err
			}
			sc.p = p
			return fmt.Sprintf("%+v\n", p), nil
		},
	},
	scenario.Command[*scenarioSuite]{
		Name: "advance", Args: []scenario.Arg{{Name: "duration", Kind: scenario.Duration, Positional: true, Required: true}},
		Help: "move the clock (backwards for a negative duration) without an event",
		Run: func(sc *scenarioSuite, c *scenario.Call) (string, error) {
			return "now " + sc.clock.At(sc.clock.Advance(c.Duration("duration"))) + "\n", nil
		},
	},
	scenario.Command[*scenarioSuite]{
		Name: "state", Help: "print everything the State exposes",
		Run: func(sc *scenarioSuite, _ *scenario.Call) (string, error) { return sc.dump(), nil },
	},
	stepCommand("observe", observeArgs(), "", "step with an observation of the members", observeOf),
	stepCommand("admit", []scenario.Arg{{Name: "planned", Kind: scenario.Count, Required: true}}, "",
		"step with an admission whose plan places planned members",
		func(_ *scenarioSuite, c *scenario.Call) (Event, error) {
			return Admitted{Planned: c.Int("planned")}, nil
		}),
	stepCommand("reject", []scenario.Arg{{Name: "impossible", Kind: scenario.Flag}}, "the reason",
		"step with a failed admission pass (impossible: not even on an empty cluster)",
		func(_ *scenarioSuite, c *scenario.Call) (Event, error) {
			return Rejected{Impossible: c.Has("impossible"), Reason: c.Input}, nil
		}),
	stepCommand("nodes-changed", nil, "", "step with a change of the cluster's nodes",
		func(*scenarioSuite, *scenario.Call) (Event, error) { return NodesChanged{}, nil }),
	stepCommand("cancel", nil, "", "step with the group's cancellation",
		func(*scenarioSuite, *scenario.Call) (Event, error) { return Cancel{}, nil }),
	stepCommand("preempt", nil, "the message", "step with a preemption of the group",
		func(_ *scenarioSuite, c *scenario.Call) (Event, error) { return Preempt{Message: c.Input}, nil }),
	stepCommand("owner-failed", nil, "the message", "step with the failure of the members' owner",
		func(_ *scenarioSuite, c *scenario.Call) (Event, error) { return OwnerFailed{Message: c.Input}, nil }),
	stepCommand("tick", []scenario.Arg{{Name: "duration", Kind: scenario.Duration, Positional: true}}, "",
		"move the clock by duration, or to the pending timer without one, and step with a tick",
		func(sc *scenarioSuite, c *scenario.Call) (Event, error) {
			if c.Has("duration") {
				sc.clock.Advance(c.Duration("duration"))
				return Tick{}, nil
			}
			wake := sc.s.WakeAt()
			if wake.IsZero() {
				return nil, fmt.Errorf("tick without a duration needs a pending timer, found none")
			}
			sc.clock.Set(wake)
			return Tick{}, nil
		}),
)

// stepCommand is a command that steps the group with the event parse returns (parse
// may move the clock first).
func stepCommand(name string, args []scenario.Arg, input, help string, parse func(*scenarioSuite, *scenario.Call) (Event, error)) scenario.Command[*scenarioSuite] {
	return scenario.Command[*scenarioSuite]{
		Name: name, Args: args, Input: input, Help: help,
		Run: func(sc *scenarioSuite, c *scenario.Call) (string, error) {
			if !sc.hasNew {
				return "", fmt.Errorf("command %q before new", name)
			}
			ev, err := parse(sc, c)
			if err != nil {
				return "", err
			}
			return sc.step(ev), nil
		},
	}
}

func (sc *scenarioSuite) step(ev Event) string {
	var actions []Action
	sc.s, actions = Step(sc.s, sc.p, ev, sc.clock.Now())
	return sc.summary(actions)
}

func policyArgs() []scenario.Arg {
	args := []scenario.Arg{}
	for _, name := range []string{"start-timeout", "recovery-timeout", "backoff-base", "backoff-max"} {
		args = append(args, scenario.Arg{Name: name, Kind: scenario.Duration})
	}
	return append(args, scenario.Arg{Name: "max-retries", Kind: scenario.Count}, scenario.Arg{Name: "seed", Kind: scenario.Count})
}

// policyOf returns the default policy with the call's settings, validated.
func policyOf(c *scenario.Call) (Policy, error) {
	p := DefaultPolicy()
	durations := map[string]*time.Duration{
		"start-timeout": &p.StartTimeout, "recovery-timeout": &p.RecoveryTimeout,
		"backoff-base": &p.BackoffBase, "backoff-max": &p.BackoffMax,
	}
	for name, dst := range durations {
		if c.Has(name) {
			*dst = c.Duration(name)
		}
	}
	if c.Has("max-retries") {
		p.MaxRetries = c.Int("max-retries")
	}
	if c.Has("seed") {
		p.JitterSeed = uint64(c.Int("seed"))
	}
	return p, p.Validate()
}

func observeArgs() []scenario.Arg {
	var args []scenario.Arg
	for _, name := range counts {
		args = append(args, scenario.Arg{Name: name, Kind: scenario.Count})
	}
	return append(args, scenario.Arg{Name: "held", Kind: scenario.Strings, Value: "NAME:QTY,..."},
		scenario.Arg{Name: "task-missing", Kind: scenario.String, Value: "MESSAGE"},
		scenario.Arg{Name: "task-not-ready", Kind: scenario.String, Value: "MESSAGE"},
		scenario.Arg{Name: "task-failed", Kind: scenario.String, Value: "MESSAGE"})
}

func observeOf(_ *scenarioSuite, c *scenario.Call) (Event, error) {
	var o Observe
	dst := []*int{&o.Members, &o.Bound, &o.Ready, &o.Succeeded, &o.Failed, &o.Placed, &o.PlacedFailed}
	for i, name := range counts {
		*dst[i] = c.Int(name)
	}
	if c.Has("held") {
		held, err := parseHeld(c.Strings("held"))
		if err != nil {
			c.Fail("held", err)
		}
		o.Held = held
	}
	if c.Has("task-missing") {
		o.TaskMissing = c.String("task-missing")
	}
	if c.Has("task-not-ready") {
		o.TaskNotReady = c.String("task-not-ready")
	}
	if c.Has("task-failed") {
		o.TaskFailed = c.String("task-failed")
	}
	return o, nil
}

// parseHeld parses "name:quantity" pairs; "gpu" is short for nvidia.com/gpu.
func parseHeld(vals []string) (corev1.ResourceList, error) {
	held := corev1.ResourceList{}
	for _, v := range vals {
		name, qty, ok := strings.Cut(v, ":")
		if !ok {
			return nil, fmt.Errorf("want name:quantity, found %q", v)
		}
		if name == "gpu" {
			name = "nvidia.com/gpu"
		}
		q, err := resource.ParseQuantity(qty)
		if err != nil {
			return nil, fmt.Errorf("%s: quantity %q: %w", name, qty, err)
		}
		held[corev1.ResourceName(name)] = q
	}
	return held, nil
}

// at renders a time as an offset from the epoch.
func (sc *scenarioSuite) at(t time.Time) string { return sc.clock.At(t) }

// summary prints the actions of one step and the phase it left the group in.
func (sc *scenarioSuite) summary(actions []Action) string {
	var b strings.Builder
	for _, a := range actions {
		fmt.Fprintf(&b, "%s\n", a)
	}
	fmt.Fprintf(&b, "=> %s since %s, wake %s\n", sc.s.Phase(), sc.at(sc.s.Since()), sc.at(sc.s.WakeAt()))
	return b.String()
}

// dump prints everything a State exposes.
func (sc *scenarioSuite) dump() string {
	s := sc.s
	var b strings.Builder
	fmt.Fprintf(&b, "now %s\n", sc.at(sc.clock.Now()))
	fmt.Fprintf(&b, "phase %s since %s, wake %s\n", s.Phase(), sc.at(s.Since()), sc.at(s.WakeAt()))
	fmt.Fprintf(&b, "reason %s: %s\n", s.Reason(), s.Message())
	fmt.Fprintf(&b, "min %d, attempt %d admitted %s planned %d, failures %d\n",
		s.MinMember(), s.Attempt(), sc.at(s.AdmittedAt()), s.Planned(), s.Failures())
	fmt.Fprintf(&b, "observed %s\n", s.Observed())
	for _, a := range s.Attempts() {
		fmt.Fprintf(&b, "attempt #%d %s..%s ended in %s, %s: %s\n",
			a.Number, sc.at(a.AdmittedAt), sc.at(a.EndedAt), a.Stage, a.Reason, a.Message)
	}
	if d, ok := s.TimeToReady(); ok {
		fmt.Fprintf(&b, "time-to-ready %s\n", d)
	} else {
		b.WriteString("time-to-ready never\n")
	}
	fmt.Fprintf(&b, "held-before-ready %s\n", formatHeldSeconds(s.HeldBeforeReady()))
	if d, ok := s.LastCleanup(); ok {
		fmt.Fprintf(&b, "last cleanup %s\n", d)
	}
	if since, ok := s.CleanupPendingSince(); ok {
		fmt.Fprintf(&b, "cleanup pending since %s\n", sc.at(since))
	}
	return b.String()
}

func formatHeldSeconds(m map[corev1.ResourceName]float64) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for name, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%s", name, strconv.FormatFloat(v, 'g', -1, 64)))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
