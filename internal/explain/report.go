package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Step is one step of the debugging path.
type Step struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	// OK is false for the step that explains why the group is not running.
	OK bool `json:"ok"`
	// Skipped is true for steps after a failing one that could not be checked yet.
	Skipped  bool     `json:"skipped,omitempty"`
	Evidence []string `json:"evidence"`
}

// Verdict names the first failing step and the fix to try.
type Verdict struct {
	// Step is the first failing step, or 0 when every step passed.
	Step    int    `json:"step"`
	Summary string `json:"summary"`
	Fix     string `json:"fix,omitempty"`
}

// Report is the whole explanation.
type Report struct {
	Group   string  `json:"group"`
	Phase   string  `json:"phase,omitempty"`
	Steps   []Step  `json:"steps"`
	Verdict Verdict `json:"verdict"`
}

// WriteText renders the report as one line per step and the verdict.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Group)
	if r.Phase != "" {
		fmt.Fprintf(&b, " (%s)", r.Phase)
	}
	b.WriteString("\n")
	for _, s := range r.Steps {
		mark := "✓"
		switch {
		case s.Skipped:
			mark = "·"
		case !s.OK:
			mark = "✗"
		}
		fmt.Fprintf(&b, "%s %d. %s", mark, s.Number, s.Title)
		if len(s.Evidence) > 0 {
			fmt.Fprintf(&b, ": %s", s.Evidence[0])
		}
		b.WriteString("\n")
		for _, e := range s.Evidence[min(1, len(s.Evidence)):] {
			fmt.Fprintf(&b, "     %s\n", e)
		}
	}
	if r.Verdict.Step == 0 {
		fmt.Fprintf(&b, "verdict: %s\n", r.Verdict.Summary)
	} else {
		fmt.Fprintf(&b, "verdict: step %d: %s", r.Verdict.Step, r.Verdict.Summary)
		if r.Verdict.Fix != "" {
			fmt.Fprintf(&b, "; try: %s", r.Verdict.Fix)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON renders the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
