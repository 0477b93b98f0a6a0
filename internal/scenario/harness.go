package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Command is one entry of a suite's command table.
type Command[S any] struct {
	// Name is the word that starts the command in a scenario file.
	Name string
	// Args declares the arguments; anything else given is a failure.
	Args []Arg
	// Input, when set, says what the lines after the command hold (for help).
	Input string
	// Help is one line for the suite's help text.
	Help string
	// Run carries the command out on the suite's state and returns its output. An error
	// is an outcome the scenario shows, rendered as "error: ..."; a bad argument is
	// reported through the Call (Call.Fail) and fails the test instead.
	Run func(s S, c *Call) (string, error)
}

// Harness runs scenario files against a suite's command table.
type Harness[S any] struct {
	suite    string
	commands []Command[S]
	byName   map[string]int
	err      error
}

// HelpCommand is the built-in command that prints a suite's help text.
const HelpCommand = "help"

// New returns the harness of suite (a name for help text) over commands. A table with
// two commands of one name, a command named help, two arguments of one name or more
// than one positional argument is a fault that every Do reports.
func New[S any](suite string, commands ...Command[S]) *Harness[S] {
	h := &Harness[S]{suite: suite, commands: commands, byName: map[string]int{}}
	for i, c := range commands {
		if err := checkCommand(c.Name, c.Args, c.Run == nil); err != nil {
			h.err = errors.Join(h.err, err)
		}
		if _, dup := h.byName[c.Name]; dup || c.Name == HelpCommand {
			h.err = errors.Join(h.err, fmt.Errorf("suite %s: command %q is defined twice (help is built in)", suite, c.Name))
		}
		h.byName[c.Name] = i
	}
	return h
}

func checkCommand(name string, args []Arg, noRun bool) error {
	if name == "" || noRun {
		return fmt.Errorf("command %q: a command needs a name and a Run function", name)
	}
	seen, positional := map[string]bool{}, 0
	for _, a := range args {
		if seen[a.Name] || a.Name == "" {
			return fmt.Errorf("command %s: argument %q is unnamed or declared twice", name, a.Name)
		}
		seen[a.Name] = true
		if a.Positional {
			positional++
		}
		if a.Positional && a.Kind == Flag {
			return fmt.Errorf("command %s: argument %s cannot be both a flag and positional", name, a.Name)
		}
	}
	if positional > 1 {
		return fmt.Errorf("command %s: %d positional arguments, at most 1 is allowed", name, positional)
	}
	return nil
}

// Do runs one command of a scenario file on s and returns its output. The error is
// the harness's: an unknown command, a bad argument, a fault of the table. A command's
// own error is output.
func (h *Harness[S]) Do(s S, d *datadriven.TestData) (string, error) {
	if h.err != nil {
		return "", h.err
	}
	if d.Cmd == HelpCommand {
		if len(d.CmdArgs) > 0 {
			return "", fmt.Errorf("help takes no arguments, found %v", d.CmdArgs)
		}
		return h.Help(), nil
	}
	i, ok := h.byName[d.Cmd]
	if !ok {
		return "", fmt.Errorf("unknown command %q; the %s suite has: %s", d.Cmd, h.suite, strings.Join(h.names(), ", "))
	}
	cmd := h.commands[i]
	if cmd.Input == "" && strings.TrimSpace(d.Input) != "" {
		return "", fmt.Errorf("%s takes no input lines, found %q", cmd.Name, d.Input)
	}
	c, err := parseCall(cmd.Name, cmd.Args, d)
	if err != nil {
		return "", err
	}
	out, err := cmd.Run(s, c)
	switch {
	case c.err != nil:
		return "", c.err
	case err != nil:
		return "error: " + err.Error() + "\n", nil
	}
	return out, nil
}

// Run runs every scenario file under dir (datadriven.Walk), each against the state
// fresh returns for it. With -rewrite, datadriven writes each command's output back
// into the file instead of comparing; review the diff. A harness error fails the test
// at the command's position in the file.
func (h *Harness[S]) Run(t *testing.T, dir string, fresh func(t *testing.T) S) {
	t.Helper()
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		s := fresh(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.Do(s, d)
			if err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			return out
		})
	})
}

func (h *Harness[S]) names() []string {
	names := []string{HelpCommand}
	for _, c := range h.commands {
		names = append(names, c.Name)
	}
	return names
}

// Help renders the suite's commands, one synopsis and help line each, in table order.
func (h *Harness[S]) Help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s scenario commands (each followed by ---- and its output):\n", h.suite)
	for _, c := range h.commands {
		b.WriteString(usage(c.Name, c.Args)[len("usage: "):])
		if c.Input != "" {
			b.WriteString("  <input: " + c.Input + ">")
		}
		b.WriteString("\n")
		if c.Help != "" {
			b.WriteString("    " + c.Help + "\n")
		}
	}
	b.WriteString(HelpCommand + "\n    print this text\n")
	return b.String()
}
