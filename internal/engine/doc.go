// Package engine is muster's decision core as one object: it keeps the cluster snapshot,
// every group's lifecycle state and the admission queue, takes observations (nodes, pods,
// group objects, queues, the time) and returns what the caller must do (bind these pods
// to these nodes, evict those, report these events), and when to call it again.
//
// It is pure in the manner of etcd's raft RawNode: no client, no clock, no goroutines.
// The Kubernetes controller (package controller) and the simulator (package sim) are two
// shells around the same Engine, so what the simulator measures is what the scheduler does.
//
// A caller's loop is:
//
//	e.SetNode(n) / e.SetPod(p, groupKey) / e.SetGroup(spec) / ... as things change
//	out := e.Step(now)
//	carry out out.Binds() and out.Evictions, record out.Events
//	call Step again on the next change, or at out.WakeAt
package engine
