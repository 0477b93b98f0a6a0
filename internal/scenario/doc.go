// Package scenario is the shared harness of muster's data-driven scenario tests
// (github.com/cockroachdb/datadriven): a file in a suite's testdata is a list of
// commands, each followed by `----` and the output it must print; `go test -run
// TestScenarios -rewrite` regenerates the outputs, and the diff is reviewed.
//
// A suite (the engine's, over a simulated cluster; the lifecycle's, over one group's
// State) is a table of Commands over its own state S. The harness parses each
// command's arguments against the table before the command runs (key=value, counts,
// durations, lists, bare flags and one positional argument), so that a misspelt or
// malformed argument fails the test with a message naming the command, the argument
// and the value, instead of a panic or a silent default. It dispatches the command,
// renders a command's own error as `error: ...` output (an expected outcome a scenario
// may show), generates the suite's help text from the table (the built-in `help`
// command prints it), and keeps the scenario clock: an epoch, durations to advance it
// by, and times rendered as offsets from the epoch.
//
// The package imports neither the engine nor the lifecycle: package lifecycle's
// scenario test is an internal test (package lifecycle), and an import of lifecycle
// from here would be a cycle.
//
// The lifecycle suite has no `explain` command. Its test is internal, and package
// explain imports engine, which imports lifecycle: importing explain there is a cycle.
// Moving the suite to an external test package would break the cycle but not the
// mismatch: explain renders the record the scheduler writes from an engine.Status
// (explain.RecordOf), with the group's spec, members and queue, and a lone
// lifecycle.State has none of those; building an engine.Status by hand in the test would
// be a second copy of engine.Group's mapping, explaining states the engine never
// produces. The engine suite, an external test package over the engine and a simulated
// cluster, has `explain`.
package scenario
