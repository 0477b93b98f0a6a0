// Package lifecycle is muster's group state machine: it decides, from observations of a
// group's member pods and from the queue's admission decisions, which phase the group is
// in, when it must be evicted, retried or given up on, and what it cost while it waited.
//
// The package is pure, in the manner of etcd's raft: Step takes the current State, the
// group's Policy, one Event and the current time, and returns the next State with the
// Actions the caller must carry out (enqueue, dequeue, evict every member, report a
// transition). It reads no clock, starts no goroutines and uses no global random source;
// time passes only through the now argument, and timers fire only on a Tick event, which
// the caller delivers at or after State.WakeAt.
//
// The phases follow DESIGN.md §4:
//
//	Gathering ─(≥minMember pods)→ Queued ─(Admitted)→ Binding ─(bound)→ Starting ─(ready)→ Running ─→ Finished
//	                                │  ▲                                   │ start-timeout     │ member lost
//	                      Impossible┘  └──────────── Backoff ←── evict ────┘                   ▼
//	                                                    │ retry limit              Recovering ─(recovery-timeout)→ evict
//	                                                    ▼
//	                                                  Failed            Cancelled (from any non-terminal phase)
//
// Alongside the phase, State keeps the per-group measurements the guide asks for: time
// from admission until minMember members were Ready, resource-seconds held before the
// group was Ready (integrated exactly between observations), and the cleanup time from an
// EvictAll until an observation shows no member bound and nothing held. Cleanup ends on
// "nothing bound" rather than "no member exists" because job controllers recreate evicted
// members at once, unbound; when it ends, Step emits a Released action carrying the time.
//
// Scenario files in testdata/scenarios document every transition; regenerate their
// expected output with `go test ./internal/lifecycle -run TestScenarios -rewrite`.
package lifecycle
