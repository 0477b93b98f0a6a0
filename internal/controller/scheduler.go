package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/metrics"
	"github.com/muster-sched/muster/internal/source"
)

// scheduler is the leader-elected runnable that owns the engine. Every field below
// changes is owned by the loop goroutine.
type scheduler struct {
	cfg   *musterv1alpha1.Configuration
	clock clock.WithTicker
	log   logr.Logger
	mgr   manager.Manager
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	// recorder records Events; broadcaster writes them while the scheduler runs.
	recorder    events.EventRecorder
	broadcaster events.EventBroadcaster
	// signer signs and verifies the records and plans muster reads back (trust.go).
	signer signer

	changes      *changes
	apis         map[engine.Source]bool
	queuesServed bool

	eng *engine.Engine
	// pods holds every pod the engine knows, by key.
	pods map[string]*corev1.Pod
	// members holds each group's pods by key: muster's members, and pods of other
	// schedulers that name the group (for the schedulerName diagnosis).
	members map[string]map[string]*corev1.Pod
	// memberOf holds the key of the group each pod in pods is scheduled in.
	memberOf map[string]string
	// declared indexes pod keys by the group they name, and declaredBy is its
	// inverse: a basic native PodGroup's pods are scheduled as groups of their own.
	declared   map[string]map[string]bool
	declaredBy map[string]string
	// owners caches the workload controllers read for diagnoses, by namespace and UID;
	// ownerObjects holds each group's, as of its last translation.
	owners       map[types.NamespacedName]ownerEntry
	ownerObjects map[string]*unstructured.Unstructured
	// rechecks holds the groups whose owner is read again after a member failed (see
	// ownerfail.go).
	rechecks map[string]*recheck
	// said holds, per pod key, the reason and message muster last gave a pod it cannot
	// schedule for a reason only the pod shows (see silent.go).
	said map[string]string
	// failed holds the keys of muster's pods seen Failed, for replaceFailed.
	failed map[string]bool
	// objects holds the group objects by group key.
	objects map[string]client.Object
	// specDirty holds the groups whose spec must be translated again.
	specDirty map[string]bool
	// recreate holds the recorded pods to create again once their old pod is gone.
	recreate map[string]*recreation
	// suspended holds the Jobs muster suspended to evict their groups and will resume;
	// leaving holds, by UID, the pods of the Jobs it suspended, which are no members of
	// any group while they go, and their eviction's cleanup.
	suspended map[types.NamespacedName]*suspension
	leaving   map[types.UID]*cleanup
	// written holds the last status written per group, to write only changes.
	written map[string]string
	// conditions holds the conditions last written per group.
	conditions map[string][]metav1.Condition
	// queueWritten holds the last status written per Queue, to write only changes.
	queueWritten map[string]string
	// queueNamespaces holds the namespaces each Queue's selector admits, as last applied,
	// and queueErrors why a Queue's selector admits none when it does not parse.
	queueNamespaces map[string]map[string]bool
	queueErrors     map[string]error
	// recorded holds the lifecycle record last written per group.
	recorded map[string]string
	// phases holds the status.phase last written on each scheduler-plugins PodGroup.
	phases map[string]spv1alpha1.PodGroupPhase
	// significant and wroteAt hold, per group, the state last written and when.
	significant map[string]string
	wroteAt     map[string]time.Time
	// abandoned holds, per group, the significance of the status write the API server
	// refused for good: it is not tried again until the group's state changes.
	abandoned map[string]string
	metrics   *metrics.Metrics
	// observer, when set, is told of every Step (the dashboard's cost ledger).
	observer StepObserver
	writer   *statusWriter
	binder   *binder
	// nextSummary is when the loop next reads every group's status (see report).
	nextSummary time.Time
}

var _ manager.LeaderElectionRunnable = (*scheduler)(nil)

// NeedLeaderElection reports that only the leader schedules.
func (s *scheduler) NeedLeaderElection() bool { return true }

// Start runs the scheduler until ctx is done: it watches, completes or undoes the plans
// a previous leader left in flight, then runs the loop.
func (s *scheduler) Start(ctx context.Context) error {
	s.changes = newChanges()
	s.eng = engine.New(s.engineConfig())
	s.initState()
	if err := s.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("starting the Event recorder: %w", err)
	}
	defer s.broadcaster.Shutdown()
	var err error
	if s.signer, err = loadSigningKey(ctx, s.kube, s.cfg.Namespace); err != nil {
		return err
	}
	if err := s.watch(ctx); err != nil {
		return err
	}
	if err := s.recoverInFlight(ctx); err != nil {
		return err
	}
	if err := s.findSuspended(ctx); err != nil {
		return err
	}
	s.writer = newStatusWriter(s.log)
	go s.writer.run(ctx)
	s.binder = newBinder(func() { s.changes.mark(func() {}) })
	binding := make(chan struct{})
	go func() {
		defer close(binding)
		s.binder.run(ctx, s.bindGroup)
	}()
	s.log.Info("scheduling", "schedulerName", s.cfg.SchedulerName, "defaultQueue", s.cfg.DefaultQueue)
	s.loop(ctx)
	<-binding // binds in flight end with ctx; none outlives the scheduler
	return nil
}

// initState makes the maps the loop keeps, empty.
func (s *scheduler) initState() {
	s.pods, s.members = map[string]*corev1.Pod{}, map[string]map[string]*corev1.Pod{}
	s.objects, s.specDirty = map[string]client.Object{}, map[string]bool{}
	s.recreate, s.written = map[string]*recreation{}, map[string]string{}
	s.conditions, s.recorded = map[string][]metav1.Condition{}, map[string]string{}
	s.significant, s.wroteAt, s.abandoned = map[string]string{}, map[string]time.Time{}, map[string]string{}
	s.phases = map[string]spv1alpha1.PodGroupPhase{}
	s.queueWritten = map[string]string{}
	s.queueNamespaces, s.queueErrors = map[string]map[string]bool{}, map[string]error{}
	s.memberOf, s.declared, s.declaredBy = map[string]string{}, map[string]map[string]bool{}, map[string]string{}
	s.failed, s.suspended, s.leaving = map[string]bool{}, map[types.NamespacedName]*suspension{}, map[types.UID]*cleanup{}
	s.owners, s.ownerObjects = map[types.NamespacedName]ownerEntry{}, map[string]*unstructured.Unstructured{}
	s.rechecks, s.said = map[string]*recheck{}, map[string]string{}
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
		DisablePreemption:   s.cfg.Preemption == musterv1alpha1.PreemptNever,
	}
}

// loop applies changes, steps the engine and carries out its output until ctx is done.
func (s *scheduler) loop(ctx context.Context) {
	timer := s.clock.NewTimer(0)
	defer timer.Stop()
	s.ensureDefaultQueue()
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
		s.recheckOwners()
		s.apply(ctx, s.changes.take())
		for _, pod := range s.binder.takeFailed() {
			s.eng.BindFailed(pod)
		}
		began, now := time.Now(), s.clock.Now()
		out := s.eng.Step(now)
		s.observe(out, time.Since(began))
		if s.observer != nil {
			s.observer.Stepped(now, out, s.eng.Group)
		}
		s.carryOut(ctx, out)
		wakeAt := s.report(ctx, out)
		for _, at := range []time.Time{s.resumeDue(ctx), s.nextRecheck()} {
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

// report queues the status writes of the groups out changed and, once per
// summaryPeriod, of every group, with the queues' status and metrics. It returns when
// the loop must pass again: out.WakeAt, or the next summary if this pass made none.
func (s *scheduler) report(ctx context.Context, out engine.Output) time.Time {
	now := s.clock.Now()
	all := !now.Before(s.nextSummary)
	s.writeStatuses(out.Changed, all)
	if !all {
		if out.WakeAt.IsZero() || s.nextSummary.Before(out.WakeAt) {
			return s.nextSummary
		}
		return out.WakeAt
	}
	s.metrics.SetQueues(s.eng)
	s.metrics.TrackedGroups.Set(float64(s.trackedGroups()))
	s.writeQueueStatuses(ctx)
	s.nextSummary = now.Add(summaryPeriod)
	return out.WakeAt
}

// sleep returns how long to wait for wakeAt, at most the reconcile period.
func (s *scheduler) sleep(wakeAt time.Time) time.Duration {
	d := s.cfg.ReconcilePeriod.Duration
	if !wakeAt.IsZero() {
		d = min(d, max(wakeAt.Sub(s.clock.Now()), 0))
	}
	return d
}

// carryOut records the output's events, evicts, and hands the binds to the binder.
func (s *scheduler) carryOut(ctx context.Context, out engine.Output) {
	for _, ev := range out.Events {
		if !unrecorded[ev.Reason] {
			s.groupEvent(ev.Group, string(ev.Type), ev.Reason, ev.Message)
		}
	}
	s.evictGroups(ctx, out.Evictions)
	s.replaceFailed(ctx)
	s.bindAll(ctx, out.Binds)
	s.forgetGroups(out.Dropped)
}

// unrecorded are the transitions muster does not record as Kubernetes Events. In the
// normal flow each is followed at once by one that is: MembersPresent by Admitted or by
// the reason the group waits, Bound by PodsReady or StartTimeout (and a failed bind has
// its own FailedBinding event). They stay in the group's conditions and lifecycle
// record; as Events they made half of a group's Event writes and told nothing new.
var unrecorded = map[string]bool{lifecycle.ReasonMembersPresent: true, lifecycle.ReasonBound: true}

// podKey returns namespace/name.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// splitKey splits namespace/name.
func splitKey(key string) types.NamespacedName {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return types.NamespacedName{Namespace: key[:i], Name: key[i+1:]}
		}
	}
	return types.NamespacedName{Name: key}
}

// refOfKey parses a group key SOURCE/namespace/name.
func refOfKey(key string) source.Ref {
	src := splitKey(key)
	nn := splitKey(src.Name)
	return source.Ref{Source: engine.Source(src.Namespace), Namespace: nn.Namespace, Name: nn.Name}
}
