package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"
)

// Kind is the form of an argument's value.
type Kind int

// The kinds of argument.
const (
	// String is key=TEXT; a list given as key=(a,b) is joined with commas.
	String Kind = iota
	// Int is key=N, any integer.
	Int
	// Count is key=N with N ≥ 0.
	Count
	// Duration is key=DURATION in time.ParseDuration's form (30s, 5m, -10m).
	Duration
	// Counts is key=N,N,... or key=(N,N,...), each N ≥ 0.
	Counts
	// Strings is key=A,B,... or key=(A,B,...).
	Strings
	// Flag is a bare word: present or not.
	Flag
)

// String names the kind, for messages.
func (k Kind) String() string {
	names := []string{"String", "Int", "Count", "Duration", "Counts", "Strings", "Flag"}
	if int(k) < len(names) && k >= 0 {
		return names[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// placeholder is how help text shows a value of the kind.
func (k Kind) placeholder() string {
	switch k {
	case Int, Count:
		return "N"
	case Duration:
		return "DURATION"
	case Counts:
		return "N,N,..."
	case Strings:
		return "A,B,..."
	}
	return "TEXT"
}

// Arg declares one argument of a command.
type Arg struct {
	// Name is the key (submit job=a), the word of a flag (reject impossible), or, for
	// a positional argument, what help calls it (run DURATION).
	Name string
	Kind Kind
	// Required makes a missing argument a failure.
	Required bool
	// Positional is a bare value (tick 30s) rather than key=value; a command has at
	// most one.
	Positional bool
	// Value, when set, replaces the kind's placeholder in help text (label=KEY=VALUE).
	Value string
}

// synopsis renders the argument as help shows it: name=N, [name=N], [flag], DURATION.
func (a Arg) synopsis() string {
	v := a.Value
	if v == "" {
		v = a.Kind.placeholder()
	}
	s := a.Name + "=" + v
	switch {
	case a.Kind == Flag:
		s = a.Name
	case a.Positional:
		s = strings.ToUpper(a.Name)
	}
	if !a.Required {
		s = "[" + s + "]"
	}
	return s
}

// Call is one command being run: its parsed arguments and its input text.
type Call struct {
	// Cmd is the command's name.
	Cmd string
	// Input is the text on the lines after the command, trimmed.
	Input string
	args  map[string]Arg
	given map[string]bool
	vals  map[string]any
	err   error
}

// parseCall reads d's arguments against the command's declarations.
func parseCall(name string, decl []Arg, d *datadriven.TestData) (*Call, error) {
	c := &Call{Cmd: name, Input: strings.TrimSpace(d.Input), args: map[string]Arg{}, given: map[string]bool{}, vals: map[string]any{}}
	var positional *Arg
	for i, a := range decl {
		c.args[a.Name] = a
		if a.Positional {
			positional = &decl[i]
		}
	}
	for _, ca := range d.CmdArgs {
		a, ok := c.args[ca.Key]
		switch {
		case ok && !a.Positional && (a.Kind == Flag) != (len(ca.Vals) == 0):
			return nil, fmt.Errorf("%s: argument %s: %s", name, ca, a.misuse())
		case !ok && len(ca.Vals) == 0 && positional != nil && !c.given[positional.Name]:
			a, ca.Vals = *positional, []string{ca.Key}
		case !ok || a.Positional:
			return nil, fmt.Errorf("%s: unknown argument %s; %s", name, ca, usage(name, decl))
		}
		if c.given[a.Name] {
			return nil, fmt.Errorf("%s: argument %s given twice", name, a.Name)
		}
		v, err := parseValue(a.Kind, ca.Vals)
		if err != nil {
			return nil, fmt.Errorf("%s: argument %s=%q: %w", name, a.Name, strings.Join(ca.Vals, ","), err)
		}
		c.given[a.Name], c.vals[a.Name] = true, v
	}
	for _, a := range decl {
		if a.Required && !c.given[a.Name] {
			return nil, fmt.Errorf("%s: missing argument %s; %s", name, a.synopsis(), usage(name, decl))
		}
	}
	return c, nil
}

func (a Arg) misuse() string {
	if a.Kind == Flag {
		return "a flag takes no value, write it as the bare word " + a.Name
	}
	return "want " + a.Name + "=" + a.Kind.placeholder()
}

// usage renders a command's synopsis: "usage: nodes count=N [prefix=TEXT]".
func usage(name string, decl []Arg) string {
	parts := []string{"usage: " + name}
	for _, a := range decl {
		parts = append(parts, a.synopsis())
	}
	return strings.Join(parts, " ")
}

// parseValue parses the values of one argument as kind.
func parseValue(kind Kind, vals []string) (any, error) {
	joined := strings.Join(vals, ",")
	switch kind {
	case Flag:
		return true, nil
	case Int, Count:
		return parseInt(kind, joined)
	case Duration:
		d, err := time.ParseDuration(joined)
		if err != nil {
			return nil, fmt.Errorf("want a duration such as 30s or 5m")
		}
		return d, nil
	case Counts:
		var out []int
		for _, v := range strings.Split(joined, ",") {
			n, err := parseInt(Count, strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("element %q: %w", v, err)
			}
			out = append(out, n.(int))
		}
		return out, nil
	case Strings:
		return strings.Split(joined, ","), nil
	}
	return joined, nil
}

func parseInt(kind Kind, s string) (any, error) {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("want an integer")
	case kind == Count && n < 0:
		return nil, fmt.Errorf("want a count, 0 or more")
	}
	return n, nil
}

// value returns the parsed value of argument name, or the zero value of its kind when
// the argument was not given. Reading an argument the command does not declare, or as
// another kind, is a fault of the suite's table: the call fails with it.
func value[T any](c *Call, name string, kinds ...Kind) T {
	var zero T
	a, ok := c.args[name]
	if !ok || !slices.Contains(kinds, a.Kind) {
		c.fail(fmt.Errorf("%s reads argument %s, which its table does not declare as %v", c.Cmd, name, kinds))
		return zero
	}
	if v, ok := c.vals[name].(T); ok {
		return v
	}
	return zero
}

// Has reports whether argument name was given (a flag: whether it is present).
func (c *Call) Has(name string) bool {
	if _, ok := c.args[name]; !ok {
		c.fail(fmt.Errorf("%s reads argument %s, which its table does not declare", c.Cmd, name))
	}
	return c.given[name]
}

// Int returns an Int or Count argument, 0 when not given.
func (c *Call) Int(name string) int { return value[int](c, name, Int, Count) }

// Duration returns a Duration argument, 0 when not given.
func (c *Call) Duration(name string) time.Duration { return value[time.Duration](c, name, Duration) }

// String returns a String argument, "" when not given.
func (c *Call) String(name string) string { return value[string](c, name, String) }

// Counts returns a Counts argument, nil when not given.
func (c *Call) Counts(name string) []int { return value[[]int](c, name, Counts) }

// Strings returns a Strings argument, nil when not given.
func (c *Call) Strings(name string) []string { return value[[]string](c, name, Strings) }

// Fail records that argument name's value, well-formed for its kind, is not one the
// suite can use (a malformed quantity in a list, say): the test fails with why, and
// the command's output is ignored.
func (c *Call) Fail(name string, why error) {
	c.fail(fmt.Errorf("%s: argument %s: %w", c.Cmd, name, why))
}

func (c *Call) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}
