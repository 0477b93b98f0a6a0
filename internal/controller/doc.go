// Package controller is muster's Kubernetes shell around the decision core (package
// engine). It is a few owners, each with one job and its own state, wired in
// scheduler.go:
//
//   - the mirror (mirror.go, basic.go, silent.go) reads what the informers saw change
//     from the cache and tells the engine of each node and pod, and the translator
//     (translate.go) turns each changed group's object and members into its spec;
//   - the owners (owners.go) read the workload controllers behind the groups in the
//     background, never in the loop;
//   - the queue book (queues.go) applies the Queues and writes their status;
//   - the loop (scheduler.go) steps the engine and hands its Output to the others;
//   - the binder (bind.go, room.go, plan.go) carries out each of the engine's plans as
//     its ordered steps, on workers of its own;
//   - the reporter (status.go, conditions.go, writer.go) writes each group's conditions
//     and lifecycle record: those a pass changed, and every group once a second, a
//     share on each pass (sweep.go);
//   - the evictor (evict.go, replace.go) and the suspender (suspend.go) carry out
//     evictions, by deleting pods or suspending the Job that owns them;
//   - recovery (recover.go) settles, once at start, what a previous leader left in
//     flight, with the binder's steps.
//
// Informer handlers only mark objects dirty and wake the loop; the loop reads the dirty
// objects from the cache, applies them to the engine in one batch, calls Step with the
// injected clock's time, carries the Output out, and sleeps until the next change or
// the engine's WakeAt.
//
// Binding survives crashes (DESIGN §7): no member is bound before a bound member
// carries the plan (it rides on the Bindings, see bind.go), and a starting leader
// completes or undoes every plan it finds partly bound before it schedules anything
// (see recover.go).
package controller
