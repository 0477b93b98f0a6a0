package scenario_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/muster-sched/muster/internal/scenario"
)

// toy is a suite over a counter and a clock, to show the harness's own behaviour.
type toy struct {
	n     int
	clock *scenario.Clock
}

var toys = scenario.New("toy",
	scenario.Command[*toy]{
		Name: "add", Help: "add n to the counter, times times (1)",
		Args: []scenario.Arg{{Name: "n", Kind: scenario.Int, Required: true}, {Name: "times", Kind: scenario.Count}},
		Run: func(s *toy, c *scenario.Call) (string, error) {
			times := 1
			if c.Has("times") {
				times = c.Int("times")
			}
			s.n += c.Int("n") * times
			return fmt.Sprintf("n=%d", s.n), nil
		},
	},
	scenario.Command[*toy]{
		Name: "wait", Help: "move the clock", Args: []scenario.Arg{{Name: "for", Kind: scenario.Duration, Positional: true, Required: true}},
		Run: func(s *toy, c *scenario.Call) (string, error) {
			return "now " + s.clock.At(s.clock.Advance(c.Duration("for"))), nil
		},
	},
	scenario.Command[*toy]{
		Name: "echo", Help: "print the arguments back", Input: "text to print",
		Args: []scenario.Arg{{Name: "loud", Kind: scenario.Flag}, {Name: "xs", Kind: scenario.Counts}, {Name: "tags", Kind: scenario.Strings}, {Name: "name", Kind: scenario.String}},
		Run: func(s *toy, c *scenario.Call) (string, error) {
			text := c.Input
			if c.Has("loud") {
				text = strings.ToUpper(text)
			}
			return fmt.Sprintf("%s xs=%v tags=%q name=%q", text, c.Counts("xs"), c.Strings("tags"), c.String("name")), nil
		},
	},
	scenario.Command[*toy]{
		Name: "even", Help: "check that n is even (the suite's own check of a value)",
		Args: []scenario.Arg{{Name: "n", Kind: scenario.Int, Required: true}},
		Run: func(s *toy, c *scenario.Call) (string, error) {
			if c.Int("n")%2 != 0 {
				c.Fail("n", fmt.Errorf("want an even number, found %d", c.Int("n")))
			}
			return "even", nil
		},
	},
	scenario.Command[*toy]{
		Name: "refuse", Help: "a command whose outcome is an error",
		Run: func(*toy, *scenario.Call) (string, error) { return "", errors.New("the counter refuses") },
	},
	scenario.Command[*toy]{
		Name: "misread", Help: "a command that reads an argument its table does not declare",
		Run: func(s *toy, c *scenario.Call) (string, error) { return fmt.Sprint(c.Int("n")), nil },
	},
)

// TestHarness runs testdata/harness, where a harness error is printed as output
// ("harness: ...") so that the file shows each message a suite's author would see.
func TestHarness(t *testing.T) {
	s := &toy{clock: scenario.NewClock(scenario.Epoch)}
	datadriven.RunTest(t, "testdata/harness", func(t *testing.T, d *datadriven.TestData) string {
		out, err := toys.Do(s, d)
		if err != nil {
			return "harness: " + err.Error() + "\n"
		}
		return out
	})
}

// TestRun checks that Run gives each file fresh state and passes on a good file.
func TestRun(t *testing.T) {
	files := 0
	toys.Run(t, "testdata/run", func(*testing.T) *toy {
		files++
		return &toy{clock: scenario.NewClock(scenario.Epoch)}
	})
	if files != 2 {
		t.Fatalf("Run made fresh state %d times, want once for each of the 2 files", files)
	}
}

func TestBadTables(t *testing.T) {
	run := func(*toy, *scenario.Call) (string, error) { return "", nil }
	tests := []struct {
		name     string
		commands []scenario.Command[*toy]
		want     string
	}{
		{"duplicate command", []scenario.Command[*toy]{{Name: "a", Run: run}, {Name: "a", Run: run}}, `command "a" is defined twice`},
		{"help redefined", []scenario.Command[*toy]{{Name: "help", Run: run}}, `command "help" is defined twice (help is built in)`},
		{"no run", []scenario.Command[*toy]{{Name: "a"}}, `command "a": a command needs a name and a Run function`},
		{"duplicate argument", []scenario.Command[*toy]{{Name: "a", Run: run, Args: []scenario.Arg{{Name: "x"}, {Name: "x"}}}}, `argument "x" is unnamed or declared twice`},
		{"two positionals", []scenario.Command[*toy]{{Name: "a", Run: run, Args: []scenario.Arg{{Name: "x", Positional: true}, {Name: "y", Positional: true}}}}, "2 positional arguments"},
		{"positional flag", []scenario.Command[*toy]{{Name: "a", Run: run, Args: []scenario.Arg{{Name: "x", Kind: scenario.Flag, Positional: true}}}}, "cannot be both a flag and positional"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := scenario.New("bad", tt.commands...)
			_, err := h.Do(&toy{}, &datadriven.TestData{Cmd: "a"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Do on a bad table: got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestClock(t *testing.T) {
	c := scenario.NewClock(scenario.Epoch)
	if got := c.At(time.Time{}); got != "none" {
		t.Errorf("At(zero) = %q, want none", got)
	}
	c.Advance(90 * time.Second)
	c.Advance(-30 * time.Second)
	if got, want := c.At(c.Now()), "+1m0s"; got != want {
		t.Errorf("after +90s and -30s At(Now) = %q, want %q", got, want)
	}
	if got, want := c.At(c.Epoch().Add(-time.Minute)), "-1m0s"; got != want {
		t.Errorf("At(epoch-1m) = %q, want %q", got, want)
	}
	c.Set(c.Epoch().Add(time.Hour))
	if c.Elapsed() != time.Hour {
		t.Errorf("Elapsed after Set(epoch+1h) = %s, want 1h0m0s", c.Elapsed())
	}
}
