// Package controller is muster's Kubernetes shell around the decision core (package
// engine): it watches Nodes, Pods, the three PodGroup APIs and Queues through a
// controller-runtime manager, translates group objects and pods with package source,
// feeds the engine, and carries out its Output: it binds the members, each Binding
// carrying the group's plan, evicts (and, for pods with no controller, recreates)
// members, writes conditions on the group objects and records Events.
//
// One goroutine owns the engine. Informer handlers only mark objects dirty and wake it;
// the loop reads the dirty objects from the cache, applies them to the engine in one
// batch, calls Step with the injected clock's time, carries the Output out, and sleeps
// until the next change or the engine's WakeAt.
//
// Binding survives crashes (DESIGN §7): no member is bound before a bound member
// carries the plan (it rides on the Bindings, see bind.go), and a starting leader
// completes or undoes every plan it finds partly bound before it schedules anything
// (see recover.go).
package controller
