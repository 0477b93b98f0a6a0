package engine

// FullPasses makes e decide and report every waiting group on every admission pass
// (queue.Manager.Schedule), for the tests that compare it with an engine whose passes
// report only what changed.
func FullPasses(e *Engine) { e.fullPasses = true }

// Skipped returns how many waiting groups e's admission passes left unreported, as
// unchanged, since it was made.
func Skipped(e *Engine) int { return e.skipped }
