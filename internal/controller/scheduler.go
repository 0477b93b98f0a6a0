package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// scheduler is the leader-elected runnable that owns the engine and runs the decision
// loop: it applies what the mirror read, steps the engine, and hands the Output to the
// owner of each part of it. Each owner keeps its own state: the mirror the pods and
// group objects, the owners the workload controllers, the queue book the Queues, the
// reporter what it wrote, the evictor and the suspender what they will create or resume
// again, the binder nothing but its jobs, podsched the PodScheduled conditions it
// will write. All but the binder, the status writer, the owner readers, podsched's
// writer and the evictor's workers run on the loop's goroutine: the loop decides, and
// sends no request of its own but a Job's suspension or resumption, a claim's release,
// a Queue's status and the creation of a recorded pod again.
type scheduler struct {
	*kit
	mgr manager.Manager
	// broadcaster writes the recorder's Events while the scheduler runs.
	broadcaster events.EventBroadcaster

	changes *changes
	eng     *engine.Engine

	mirror     *mirror
	translator *translator
	owners     *owners
	queues     *queueBook
	reporter   *reporter
	evictor    *evictor
	suspender  *suspender
	claims     *claimReleaser
	binder     *binder
	podsched   *podScheduled

	// filters are kube-scheduler's filter plugins with the configured arguments.
	filters *kubefit.Host
	// dra is set when the cluster serves DRA (resource.k8s.io/v1), whose objects are
	// then watched for the filters; taintRules when it serves DeviceTaintRules too.
	dra, taintRules bool
	// observer, when set, is told of every Step (the dashboard's cost ledger).
	observer StepObserver
	// nextSummary is when the loop next reads the queues' status and metrics, and sweep
	// the groups it reads whole this period (see report).
	nextSummary time.Time
	sweep       sweep
}

var _ manager.LeaderElectionRunnable = (*scheduler)(nil)

// NeedLeaderElection reports that only the leader schedules.
func (s *scheduler) NeedLeaderElection() bool { return true }

// wire makes the engine and the owners, empty, and connects them.
func (s *scheduler) wire(sig signer, mapper meta.RESTMapper, queueStatus client.SubResourceWriter) {
	s.changes = newChanges()
	s.eng = engine.New(s.engineConfig())
	s.owners = newOwners(s.kit, mapper, s.changes.markSpecs)
	s.queues = newQueueBook(s.kit, s.eng, queueStatus)
	s.mirror = newMirror(s.kit, s.eng, s.owners, s.queues)
	s.translator = &translator{kit: s.kit, eng: s.eng, mirror: s.mirror, owners: s.owners, queues: s.queues}
	s.reporter = newReporter(s.kit, s.eng, s.mirror, s.owners)
	s.evictor = newEvictor(s.kit, s.eng, s.mirror)
	s.evictor.signer = sig
	wake := func() { s.changes.mark(func() {}) }
	s.suspender = newSuspender(s.kit, s.eng, s.mirror, s.owners, wake)
	s.claims = newClaimReleaser(s.kit, wake)
	s.binder = newBinder(s.kit, sig, wake)
	s.podsched = newPodScheduled(s.kit, s.eng, s.mirror)
	s.mirror.notes.conds = s.podsched
	s.mirror.hooks = podHooks{
		leaving:    s.suspender.isLeaving,
		gone:       s.suspender.gone,
		seen:       s.evictor.recreateIfRecorded,
		objectGone: s.reporter.forget,
	}
}

// Start runs the scheduler until ctx is done: it watches, completes or undoes the plans
// a previous leader left in flight, then runs the loop.
func (s *scheduler) Start(ctx context.Context) error {
	if err := s.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("starting the Event recorder: %w", err)
	}
	defer s.broadcaster.Shutdown()
	sig, err := loadSigningKey(ctx, s.kube, s.cfg.Namespace)
	if err != nil {
		return err
	}
	s.wire(sig, s.mgr.GetRESTMapper(), s.mgr.GetClient().Status())
	if err := s.watch(ctx); err != nil {
		return err
	}
	rec := &recovery{kit: s.kit, signer: sig, binder: s.binder, evictor: s.evictor, filters: s.filters, dra: s.dra, taintRules: s.taintRules}
	if err := rec.run(ctx); err != nil {
		return err
	}
	if err := s.suspender.findSuspended(ctx); err != nil {
		return err
	}
	runs := []func(context.Context){s.reporter.writer.run, s.binder.run, s.owners.run, s.podsched.run, s.evictor.run, s.evictor.runRecreations, s.queues.status.run, s.suspender.run, s.claims.run}
	done := make(chan struct{}, len(runs))
	for _, run := range runs {
		go func() {
			defer func() { done <- struct{}{} }()
			run(ctx)
		}()
	}
	s.log.Info("scheduling", "schedulerNames", s.cfg.SchedulerNames(), "defaultQueue", s.cfg.DefaultQueue)
	s.loop(ctx)
	for range runs {
		<-done // binds and reads in flight end with ctx; none outlives the scheduler
	}
	return nil
}

// engineConfig translates the configuration into the engine's defaults.
func (s *scheduler) engineConfig() engine.Config {
	d := s.cfg.GroupDefaults
	return engine.Config{
		DefaultQueue: s.cfg.DefaultQueue,
		Policy: lifecycle.Policy{
			StartTimeout:    d.StartTimeout.Duration,
			RecoveryTimeout: d.RecoveryTimeout.Duration,
			MaxRetries:      int(*d.MaxRetries),
			BackoffBase:     d.BackoffBase.Duration,
			BackoffMax:      d.BackoffMax.Duration,
		},
		StarvationThreshold: s.cfg.StarvationThreshold.Duration,
		SizeOrder: engine.SizeOrder{PerDeviceHour: s.cfg.SizeOrder.HandicapPerDeviceHour.Duration,
			Max: s.cfg.SizeOrder.MaxHandicap.Duration},
		DisablePreemption: s.cfg.Preemption == musterv1alpha1.PreemptNever,
		PreemptionSlack:   s.cfg.PreemptionSlack.Duration,
		Filters:           s.filters,
	}
}

// loop applies changes, steps the engine and carries out its output until ctx is done.
func (s *scheduler) loop(ctx context.Context) {
	timer := s.clock.NewTimer(0)
	defer timer.Stop()
	s.queues.ensureDefault()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changes.wake:
		case <-timer.C():
		}
		if ctx.Err() != nil {
			return
		}
		s.owners.recheck(s.mirror.known)
		s.mirror.apply(ctx, s.changes.take())
		s.suspender.takeAnswers(ctx, s.evictor)
		for _, key := range s.mirror.takeDirty() {
			s.translator.translate(key)
		}
		for _, pod := range s.binder.takeFailed() {
			s.eng.BindFailed(pod)
		}
		for _, group := range s.claims.takeFailed() {
			s.eng.ClaimReleaseFailed(group)
		}
		began, now := time.Now(), s.clock.Now()
		out := s.eng.Step(now)
		s.metrics.Record(out, time.Since(began))
		if s.observer != nil {
			s.observer.Stepped(now, out, s.eng.Group)
		}
		s.carryOut(ctx, out)
		wakeAt := s.report(ctx, out)
		for _, at := range []time.Time{s.suspender.resumeDue(), s.owners.nextRecheck(), s.mirror.notes.nextDue()} {
			if !at.IsZero() && (wakeAt.IsZero() || at.Before(wakeAt)) {
				wakeAt = at
			}
		}
		timer.Stop()
		timer.Reset(s.sleep(wakeAt))
	}
}

// summaryPeriod is how often the loop reads every group's status and the queues'
// usage, rather than only the groups a pass changed. Waiting groups' diagnoses, queue
// usage and the per-queue metrics move on almost every pass of a busy scheduler;
// reading them all on each pass would cost more than the decisions.
const summaryPeriod = time.Second

// report queues the status writes of the groups out changed and of the groups whose
// turn in the sweep came (every group once per summaryPeriod), and, once per
// summaryPeriod, the queues' status and metrics. It returns when the loop must pass
// again: out.WakeAt, or the end of the sweep's round or the next summary if sooner.
func (s *scheduler) report(ctx context.Context, out engine.Output) time.Time {
	now := s.clock.Now()
	swept := s.sweep.take(now, s.eng.Groups)
	s.reporter.write(out.Changed, swept)
	s.podsched.sync(out.Events, swept)
	if !now.Before(s.nextSummary) {
		s.metrics.SetQueues(s.eng)
		s.metrics.TrackedGroups.Set(float64(s.trackedGroups()))
		s.queues.writeStatuses(ctx)
		s.nextSummary = now.Add(summaryPeriod)
	}
	wakeAt := out.WakeAt
	for _, at := range []time.Time{s.nextSummary, s.sweep.end()} {
		if wakeAt.IsZero() || at.Before(wakeAt) {
			wakeAt = at
		}
	}
	return wakeAt
}

// sleep returns how long to wait for wakeAt, at most the reconcile period.
func (s *scheduler) sleep(wakeAt time.Time) time.Duration {
	d := s.cfg.ReconcilePeriod.Duration
	if !wakeAt.IsZero() {
		d = min(d, max(wakeAt.Sub(s.clock.Now()), 0))
	}
	return d
}

// carryOut records the output's events, evicts, replaces failed members, and hands the
// plans to the binder.
func (s *scheduler) carryOut(ctx context.Context, out engine.Output) {
	for _, ev := range out.Events {
		if !unrecorded[ev.Reason] {
			s.mirror.groupEvent(ev.Group, string(ev.Type), ev.Reason, ev.Message)
		}
	}
	s.evictGroups(out.Evictions)
	s.claims.send(out.ClaimReleases)
	s.evictor.replaceFailed()
	for _, plan := range out.Plans {
		s.binder.submit(ctx, newBindJob(plan, s.mirror.pod))
	}
	s.forgetGroups(out.Dropped)
}

// evictGroups carries out the engine's evictions, group by group: a group that a batch
// Job owns whole is evicted by suspending the Job, any other by deleting its pods. If
// the suspension fails, the pods are deleted (see suspender.takeAnswers).
func (s *scheduler) evictGroups(evictions []engine.Eviction) {
	byGroup := map[string][]engine.Eviction{}
	var order []string
	for _, ev := range evictions {
		if byGroup[ev.Group] == nil {
			order = append(order, ev.Group)
		}
		byGroup[ev.Group] = append(byGroup[ev.Group], ev)
	}
	for _, gk := range order {
		evs := byGroup[gk]
		if job := s.suspender.suspendable(gk, evs[0]); job != nil {
			err := s.suspender.evict(gk, job, evs)
			if err == nil {
				continue
			}
			s.log.Error(err, "suspending a Job to evict its group; deleting its pods instead", "group", gk, "job", job)
		}
		for _, ev := range evs {
			s.evictor.evict(ev)
		}
	}
}

// unrecorded are the transitions muster does not record as Kubernetes Events. In the
// normal flow each is followed at once by one that is: MembersPresent by Admitted or by
// the reason the group waits, Bound by PodsReady or StartTimeout (and a failed bind has
// its own FailedBinding event). They stay in the group's conditions and lifecycle
// record; as Events they made half of a group's Event writes and told nothing new.
var unrecorded = map[string]bool{lifecycle.ReasonMembersPresent: true, lifecycle.ReasonBound: true}
