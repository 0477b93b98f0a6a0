package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// epoch is the scenario clock's origin; scenario output prints times as offsets from it.
var epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// scenario is the state of one datadriven file: a group, its policy and a clock.
type scenario struct {
	s      State
	p      Policy
	now    time.Time
	hasNew bool
}

// TestScenarios runs the scenario files in testdata/scenarios/. Regenerate the expected output with
// `go test ./internal/lifecycle -run TestScenarios -rewrite` and review the diff.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		sc := &scenario{p: DefaultPolicy(), now: epoch}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := sc.run(t, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func (sc *scenario) run(t *testing.T, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "new":
		var minMember int
		d.ScanArgs(t, "min", &minMember)
		s, err := New(minMember, sc.now)
		if err != nil {
			return "", err
		}
		sc.s, sc.hasNew = s, true
		return sc.summary(nil), nil
	case "policy":
		p, err := parsePolicy(t, d)
		if err != nil {
			return "", err
		}
		sc.p = p
		return fmt.Sprintf("%+v\n", p), nil
	case "advance":
		d, err := parseDuration(d)
		if err != nil {
			return "", err
		}
		sc.now = sc.now.Add(d)
		return "now " + sc.at(sc.now) + "\n", nil
	case "state":
		return sc.dump(), nil
	}
	if !sc.hasNew {
		return "", fmt.Errorf("command %q before new", d.Cmd)
	}
	ev, err := sc.event(t, d)
	if err != nil {
		return "", err
	}
	var actions []Action
	sc.s, actions = Step(sc.s, sc.p, ev, sc.now)
	return sc.summary(actions), nil
}

// event parses an event command; tick also moves the clock.
func (sc *scenario) event(t *testing.T, d *datadriven.TestData) (Event, error) {
	switch d.Cmd {
	case "observe":
		return parseObserve(t, d)
	case "admit":
		var planned int
		d.ScanArgs(t, "planned", &planned)
		return Admitted{Planned: planned}, nil
	case "reject":
		return Rejected{Impossible: d.HasArg("impossible"), Reason: strings.TrimSpace(d.Input)}, nil
	case "nodes-changed":
		return NodesChanged{}, nil
	case "cancel":
		return Cancel{}, nil
	case "preempt":
		return Preempt{Message: strings.TrimSpace(d.Input)}, nil
	case "owner-failed":
		return OwnerFailed{Message: strings.TrimSpace(d.Input)}, nil
	case "tick":
		if len(d.CmdArgs) == 0 {
			wake := sc.s.WakeAt()
			if wake.IsZero() {
				return nil, fmt.Errorf("tick without a duration needs a pending timer, found none")
			}
			sc.now = wake
			return Tick{}, nil
		}
		dur, err := parseDuration(d)
		if err != nil {
			return nil, err
		}
		sc.now = sc.now.Add(dur)
		return Tick{}, nil
	}
	return nil, fmt.Errorf("unknown command %q", d.Cmd)
}

// parseDuration reads the command's single positional argument as a duration.
func parseDuration(d *datadriven.TestData) (time.Duration, error) {
	if len(d.CmdArgs) != 1 || len(d.CmdArgs[0].Vals) != 0 {
		return 0, fmt.Errorf("%s wants one duration argument, found %q", d.Cmd, d.CmdArgs)
	}
	return time.ParseDuration(d.CmdArgs[0].Key)
}

func parsePolicy(t *testing.T, d *datadriven.TestData) (Policy, error) {
	p := DefaultPolicy()
	durations := map[string]*time.Duration{
		"start-timeout": &p.StartTimeout, "recovery-timeout": &p.RecoveryTimeout,
		"backoff-base": &p.BackoffBase, "backoff-max": &p.BackoffMax,
	}
	for _, arg := range d.CmdArgs {
		var err error
		switch key := arg.Key; {
		case durations[key] != nil:
			*durations[key], err = time.ParseDuration(arg.SingleVal(t))
		case key == "max-retries":
			p.MaxRetries, err = strconv.Atoi(arg.SingleVal(t))
		case key == "seed":
			p.JitterSeed, err = strconv.ParseUint(arg.SingleVal(t), 10, 64)
		default:
			err = fmt.Errorf("unknown policy argument %q", key)
		}
		if err != nil {
			return Policy{}, err
		}
	}
	return p, p.Validate()
}

func parseObserve(t *testing.T, d *datadriven.TestData) (Observe, error) {
	var o Observe
	counts := map[string]*int{"members": &o.Members, "bound": &o.Bound, "ready": &o.Ready,
		"succeeded": &o.Succeeded, "failed": &o.Failed, "placed": &o.Placed, "placed-failed": &o.PlacedFailed}
	for _, arg := range d.CmdArgs {
		if arg.Key == "held" {
			held, err := parseHeld(arg.Vals)
			if err != nil {
				return Observe{}, err
			}
			o.Held = held
			continue
		}
		dst, ok := counts[arg.Key]
		if !ok {
			return Observe{}, fmt.Errorf("unknown observe argument %q", arg.Key)
		}
		n, err := strconv.Atoi(arg.SingleVal(t))
		if err != nil {
			return Observe{}, err
		}
		*dst = n
	}
	return o, nil
}

// parseHeld parses "name:quantity" pairs; "gpu" is short for nvidia.com/gpu.
func parseHeld(vals []string) (corev1.ResourceList, error) {
	held := corev1.ResourceList{}
	for _, v := range vals {
		name, qty, ok := strings.Cut(v, ":")
		if !ok {
			return nil, fmt.Errorf("held wants name:quantity, found %q", v)
		}
		if name == "gpu" {
			name = "nvidia.com/gpu"
		}
		q, err := resource.ParseQuantity(qty)
		if err != nil {
			return nil, fmt.Errorf("held %s: %w", name, err)
		}
		held[corev1.ResourceName(name)] = q
	}
	return held, nil
}

// at renders a time as an offset from the epoch.
func (sc *scenario) at(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return "+" + t.Sub(epoch).String()
}

// summary prints the actions of one step and the phase it left the group in.
func (sc *scenario) summary(actions []Action) string {
	var b strings.Builder
	for _, a := range actions {
		fmt.Fprintf(&b, "%s\n", a)
	}
	fmt.Fprintf(&b, "=> %s since %s, wake %s\n", sc.s.Phase(), sc.at(sc.s.Since()), sc.at(sc.s.WakeAt()))
	return b.String()
}

// dump prints everything a State exposes.
func (sc *scenario) dump() string {
	s := sc.s
	var b strings.Builder
	fmt.Fprintf(&b, "now %s\n", sc.at(sc.now))
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
