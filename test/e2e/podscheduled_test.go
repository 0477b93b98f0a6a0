package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// statusPatches counts, per pod name, the PATCH requests of pods/NAME/status that pass
// a proxy in namespace ns.
type statusPatches struct {
	ns string
	mu sync.Mutex
	n  map[string]int
}

func (s *statusPatches) hook(w http.ResponseWriter, r *http.Request, forward http.Handler) {
	prefix := "/api/v1/namespaces/" + s.ns + "/pods/"
	if r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, prefix) && strings.HasSuffix(r.URL.Path, "/status") {
		s.mu.Lock()
		s.n[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, prefix), "/status")]++
		s.mu.Unlock()
	}
	forward.ServeHTTP(w, r)
}

func (s *statusPatches) of(pod string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[pod]
}

// podScheduled returns p's PodScheduled condition, or the zero condition.
func podScheduled(p *corev1.Pod) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c
		}
	}
	return corev1.PodCondition{}
}

// waitPodScheduledFalse waits until every pod of job carries PodScheduled=False with
// reason and the message of the group's Unschedulable condition.
func waitPodScheduledFalse(t *testing.T, env *sandboxtest.Env, job pytorchJob, reason string) {
	t.Helper()
	c := newClient(t, env.Config)
	for _, name := range job.podNames() {
		var group string
		p := env.WaitForPod(t, getPod(t, env, job.ns, name), "PodScheduled=False, "+reason+", with its group's message", func(p *corev1.Pod) bool {
			cond, _ := groupCondition(t, c, job.ns, job.name, "Unschedulable")
			group = cond.Message
			ps := podScheduled(p)
			return ps.Status == corev1.ConditionFalse && ps.Reason == reason && ps.Message == group && group != ""
		})
		t.Logf("pod %s: PodScheduled=False, %s: %q", p.Name, reason, podScheduled(p).Message)
	}
}

// TestPendingMembersCarryPodScheduled: a gang that does not fit the nodes while another
// holds their GPUs has PodScheduled=False, reason Unschedulable (what cluster-autoscaler
// and Karpenter scale up for), with the group's message on every member; a group that
// waits on its queue's quota, although a node is free, has PodScheduled=False with
// reason QuotaExceeded, for which no autoscaler adds nodes. Each pod's status is
// written once per change: no more than 2 patches per pod over several passes with
// the same reason. Once the holder goes, both groups are bound and each member has
// PodScheduled=True, which muster does not overwrite.
func TestPendingMembersCarryPodScheduled(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "podsched", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 2})
	c := newClient(t, env.Config)
	held, roomy := ns+"-held", ns+"-roomy"
	createQueue(t, c, held, 4, nil)
	createQueue(t, c, roomy, 100, nil)
	patches := &statusPatches{ns: ns, n: map[string]int{}}
	proxy := env.StartProxy(t)
	proxy.SetHook(patches.hook)
	m := startMuster(t, env, musterOptions{proxy: proxy, clock: true})
	inQueue := func(q string) map[string]string { return map[string]string{musterv1alpha1.QueueAnnotation: q} }
	twoGPUs := func(name string) map[string]int64 {
		return map[string]int64{name + "-master-0": 2, name + "-worker-0": 2}
	}

	holder := pytorchJob{ns: ns, name: "holder", workers: 1, gpus: twoGPUs("holder"), groupAnnotations: inQueue(held)}
	holder.create(t, env, c)
	waitCondition(t, env, c, ns, "holder", "PodsReady", metav1.ConditionTrue)
	big := pytorchJob{ns: ns, name: "big", workers: 1, gpus: twoGPUs("big"), groupAnnotations: inQueue(roomy)}
	big.create(t, env, c)
	small := pytorchJob{ns: ns, name: "small", workers: 0, groupAnnotations: inQueue(held)}
	small.create(t, env, c)

	if cond := waitCondition(t, env, c, ns, "big", "Unschedulable", metav1.ConditionTrue); cond.Reason != "Unschedulable" {
		t.Fatalf("group big: expected Unschedulable, found %s %q", cond.Reason, cond.Message)
	}
	if cond := waitCondition(t, env, c, ns, "small", "Unschedulable", metav1.ConditionTrue); cond.Reason != "QuotaExceeded" {
		t.Fatalf("group small: expected QuotaExceeded, found %s %q", cond.Reason, cond.Message)
	}
	waitPodScheduledFalse(t, env, big, corev1.PodReasonUnschedulable)
	waitPodScheduledFalse(t, env, small, "QuotaExceeded")

	// Several passes, each past messageRefresh and the summary period, with the same
	// reasons: the conditions are not written again.
	for range 3 {
		m.AdvanceClock(t, 11*time.Second)
	}
	waitPodScheduledFalse(t, env, big, corev1.PodReasonUnschedulable)
	waitPodScheduledFalse(t, env, small, "QuotaExceeded")
	for _, name := range append(big.podNames(), small.podNames()...) {
		n := patches.of(name)
		t.Logf("pod %s: %d status patches", name, n)
		if n < 1 || n > 2 {
			t.Errorf("pod %s: expected 1 or 2 status patches while its reason did not change, found %d", name, n)
		}
	}

	// A member deleted: the group gathers again, and the member left no longer says
	// Unschedulable. The member back, the group waits again and says so.
	worker := getPod(t, env, ns, "big-worker-0")
	if err := env.Kube.CoreV1().Pods(ns).Delete(context.Background(), worker.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("deleting pod %s: %v", worker.Name, err)
	}
	env.WaitForPod(t, getPod(t, env, ns, "big-master-0"), "PodScheduled=False, "+lifecycle.ReasonMembersMissing, func(p *corev1.Pod) bool {
		ps := podScheduled(p)
		return ps.Status == corev1.ConditionFalse && ps.Reason == lifecycle.ReasonMembersMissing
	})
	env.WaitFor(t, "pod "+worker.Name+" gone", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().Pods(ns).Get(ctx, worker.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	env.CreatePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: worker.Name, Labels: worker.Labels, Annotations: worker.Annotations, OwnerReferences: worker.OwnerReferences,
	}, Spec: worker.Spec})
	waitPodScheduledFalse(t, env, big, corev1.PodReasonUnschedulable)

	deleteJob(t, env, c, ns, holder.name)
	for _, name := range append(big.podNames(), small.podNames()...) {
		env.WaitForPod(t, getPod(t, env, ns, name), "PodScheduled=True", func(p *corev1.Pod) bool {
			return p.Spec.NodeName != "" && podScheduled(p).Status == corev1.ConditionTrue
		})
	}
	before := map[string]int{}
	for _, name := range append(big.podNames(), small.podNames()...) {
		before[name] = patches.of(name)
	}
	m.AdvanceClock(t, 11*time.Second)
	waitCondition(t, env, c, ns, "big", "PodsReady", metav1.ConditionTrue)
	for _, name := range append(big.podNames(), small.podNames()...) {
		p := getPod(t, env, ns, name)
		if ps := podScheduled(p); ps.Status != corev1.ConditionTrue || patches.of(name) != before[name] {
			t.Errorf("pod %s once bound: expected PodScheduled=True and no status patch, found %s %s %q and %d more patches",
				name, ps.Status, ps.Reason, ps.Message, patches.of(name)-before[name])
		}
	}
}

// refuseFirst returns a proxy hook that answers the first request of method to path
// whose body holds body with 500 and forwards every other, and the count of the requests
// it matched.
func refuseFirst(method, path, body string) (sandboxtest.Hook, *atomic.Int32) {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if r.Method == method && r.URL.Path == path {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			if bytes.Contains(b, []byte(body)) && n.Add(1) == 1 {
				http.Error(w, "injected by the test", http.StatusInternalServerError)
				return
			}
		}
		forward.ServeHTTP(w, r)
	}, &n
}

// heldRequest holds the first request of a method to a path whose body holds a string
// until release is closed, and records the API server's answer to it.
type heldRequest struct {
	method, path, body string
	held               chan struct{}
	release            chan struct{}
	once               sync.Once
	answer             chan int
}

// newHeldPatch returns a heldRequest of the first write of a condition with reason on
// the status of pod ns/name.
func newHeldPatch(ns, name, reason string) *heldRequest {
	return newHeldRequest(http.MethodPatch, "/api/v1/namespaces/"+ns+"/pods/"+name+"/status", `"reason":"`+reason+`"`)
}

func newHeldRequest(method, path, body string) *heldRequest {
	return &heldRequest{
		method: method, path: path, body: body,
		held: make(chan struct{}), release: make(chan struct{}), answer: make(chan int, 1),
	}
}

func (h *heldRequest) hook(w http.ResponseWriter, r *http.Request, forward http.Handler) {
	first := false
	if r.Method == h.method && r.URL.Path == h.path {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(h.body)) {
			h.once.Do(func() { first = true })
		}
	}
	if !first {
		forward.ServeHTTP(w, r)
		return
	}
	close(h.held)
	select {
	case <-h.release:
	case <-r.Context().Done():
		h.answer <- 0
		return
	}
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	forward.ServeHTTP(rec, r)
	h.answer <- rec.code
}

// boundWhileHeld waits until h holds muster's request, what, then creates pod "other"
// in ns and waits for it to be bound while h still holds the request.
func boundWhileHeld(t *testing.T, env *sandboxtest.Env, ns string, h *heldRequest, what string) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(sandboxtest.WaitTimeout):
		t.Fatalf("muster did not send %s", what)
	}
	other := env.CreatePod(t, sandboxtest.Pod(ns, "other").SchedulerName("muster").Obj())
	bound := env.WaitForPod(t, other, "bound while "+what+" is held", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	select {
	case code := <-h.answer:
		t.Fatalf("pod other was bound only after %s was answered (%d)", what, code)
	default:
	}
	t.Logf("pod other bound to %s while %s was held", bound.Spec.NodeName, what)
}

// statusRecorder records the status code of a response it passes on.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// TestPodScheduledNeverUndoesABind: muster's PodScheduled=False write of a pending
// member, held in flight while the member's group is admitted and bound, reaches the
// API server after the binding set PodScheduled=True: it is refused with a conflict
// (it names the resourceVersion muster saw the pod unbound at), and the pod stays
// PodScheduled=True.
func TestPodScheduledNeverUndoesABind(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	// The nodes are tainted for this test's pods alone: pending pods that earlier tests
	// left in namespaces still being deleted, queued in muster before late, would
	// otherwise take the capacity the holder frees, and late would never be bound.
	own := corev1.Taint{Key: "muster.dev/test", Value: "bindrace", Effect: corev1.TaintEffectNoSchedule}
	env.CreateNodes(t, sandbox.NodePool{Name: "bindrace", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 2, Taints: []corev1.Taint{own}})
	tolerate := func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: own.Key, Value: own.Value, Effect: own.Effect})
	}
	c := newClient(t, env.Config)
	proxy := env.StartProxy(t)
	// The write held is the engine's Unschedulable. (When late's pods reach muster before
	// their PodGroup does, late-master-0 is first told GroupNotFound: that write passes.)
	h := newHeldPatch(ns, "late-master-0", corev1.PodReasonUnschedulable)
	proxy.SetHook(h.hook)
	startMuster(t, env, musterOptions{proxy: proxy, clock: true})
	logOnFailure(t, env, c, ns, "holder", "late")
	twoGPUs := func(name string) map[string]int64 {
		return map[string]int64{name + "-master-0": 2, name + "-worker-0": 2}
	}
	holder := pytorchJob{ns: ns, name: "holder", workers: 1, gpus: twoGPUs("holder"), mutate: tolerate}
	holder.create(t, env, c)
	waitCondition(t, env, c, ns, "holder", "PodsReady", metav1.ConditionTrue)
	late := pytorchJob{ns: ns, name: "late", workers: 1, gpus: twoGPUs("late"), mutate: tolerate}
	late.create(t, env, c)
	select {
	case <-h.held:
	case <-time.After(sandboxtest.WaitTimeout):
		t.Fatal("muster wrote no PodScheduled condition on late-master-0")
	}
	deleteJob(t, env, c, ns, holder.name)
	bound := env.WaitForPod(t, getPod(t, env, ns, "late-master-0"), "bound, PodScheduled=True", func(p *corev1.Pod) bool {
		return p.Spec.NodeName != "" && podScheduled(p).Status == corev1.ConditionTrue
	})
	close(h.release)
	if code := <-h.answer; code != http.StatusConflict {
		t.Errorf("the PodScheduled write held across the bind: expected 409 Conflict, found %d", code)
	}
	after := getPod(t, env, ns, "late-master-0")
	if ps := podScheduled(after); ps.Status != corev1.ConditionTrue {
		t.Errorf("late-master-0 after the held write: expected PodScheduled=True, found %s %s %q", ps.Status, ps.Reason, ps.Message)
	}
	t.Logf("late-master-0 bound to %s (resourceVersion %s); the held write was refused", bound.Spec.NodeName, bound.ResourceVersion)
}
