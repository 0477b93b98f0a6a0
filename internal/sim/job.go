package sim

import (
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-sched/muster/internal/engine"
)

// Job is a distributed training job: Workers identical pods that make progress only while
// at least MinMember of them are Ready together, as a fixed-world-size job does.
type Job struct {
	Name      string
	Workers   int
	GPU       int64
	MinMember int
	// RunFor is the useful work: the job finishes RunFor after MinMember workers are Ready.
	RunFor time.Duration
	// ReadyAfter is the time from bind to Ready (image pull, init, rendezvous).
	ReadyAfter time.Duration
	// Predicted is the first start the scheduler predicted for the job (see Predictor),
	// or zero.
	Predicted time.Time
	// FirstWait is the kind of reason the scheduler gave for the job's group on its first
	// decision after the job arrived (see Explainer): "" when it admitted the group then,
	// or cannot say.
	FirstWait string
	// Declared, when positive, is the run time the job's pods declare (annotation
	// muster.dev/expected-runtime): what its user expects, not always RunFor.
	Declared time.Duration
	// FailInit lists worker indexes that never become Ready (a bad init container that
	// the kubelet restarts).
	FailInit []int
	// FailStart lists worker indexes whose pods fail instead of becoming Ready (a bad
	// init container with restartPolicy Never): they stay Failed until deleted.
	FailStart []int
	Queue     string
	Priority  int32
	Policy    engine.PolicyOverrides

	// Submitted, Whole, Ready and Finished are when the job was submitted, when MinMember
	// members were first bound together, Ready together, and when it finished.
	Submitted, Whole, Ready, Finished time.Time
	// HeldIncomplete is GPU-seconds bound to the job while fewer than MinMember members
	// were bound: capacity held by an incomplete group.
	HeldIncomplete float64
	// HeldBeforeReady is GPU-seconds bound to the job before MinMember members were first
	// Ready together: resource-hours held before useful progress.
	HeldBeforeReady float64
	// Evictions counts member pods the scheduler evicted.
	Evictions int
	Cancelled bool

	pods    []string // worker index → current pod key
	gen     []int    // worker index → recreation count
	started bool
	// run counts starts of useful work; a finish timer of an earlier run is void.
	run int
	// reserved is GPUs a scheduler holds for the job's pods without binding them.
	reserved int64
	// rates is what the job contributes to the world's measures now.
	rates rates
	// requests is what each of the job's pods requests and is limited to, made once: the
	// pods share it, and nobody writes a pod's spec after creation.
	requests corev1.ResourceList
}

// GroupKey is the key of the job's group.
func (j *Job) GroupKey() string { return string(engine.Coscheduling) + "/default/" + j.Name }

// Submit creates a job's group and pods, as training-operator would.
func (w *World) Submit(j *Job) { w.SubmitInterleaved(j) }

// SubmitInterleaved submits jobs whose controllers create their pods at the same time, so
// the pods arrive interleaved (a-0, b-0, a-1, b-1, ...), as two operators reconciling at
// once produce them.
func (w *World) SubmitInterleaved(jobs ...*Job) {
	most := 0
	for _, j := range jobs {
		if j.MinMember == 0 {
			j.MinMember = j.Workers
		}
		j.Submitted = w.now
		j.pods, j.gen = make([]string, j.Workers), make([]int, j.Workers)
		w.jobs[j.Name] = j
		if w.predictor != nil {
			w.unpredicted[j.GroupKey()] = j
		}
		if w.explainer != nil {
			w.arrived = append(w.arrived, j)
		}
		w.sched.SetGroup(w.groupSpec(j))
		w.logf("%s: submitted, %d workers × %d GPU, minMember %d", j.Name, j.Workers, j.GPU, j.MinMember)
		most = max(most, j.Workers)
	}
	for i := 0; i < most; i++ {
		for _, j := range jobs {
			if i < j.Workers {
				w.createPod(j, i)
			}
		}
	}
}

func (w *World) groupSpec(j *Job) engine.GroupSpec {
	return engine.GroupSpec{
		Key: j.GroupKey(), Source: engine.Coscheduling, Namespace: "default", Name: j.Name,
		MinMember: j.MinMember, Queue: j.Queue, Priority: j.Priority, Policy: j.Policy,
	}
}

// Job returns a submitted job by name.
func (w *World) Job(name string) *Job { return w.jobs[name] }

// Jobs returns the jobs sorted by name.
func (w *World) Jobs() []*Job {
	out := make([]*Job, 0, len(w.jobs))
	for _, j := range w.jobs {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *Job) int { return compareStrings(a.Name, b.Name) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (w *World) createPod(j *Job, i int) {
	name := j.Name + "-" + strconv.Itoa(i)
	if g := j.gen[i]; g > 0 {
		name += "-r" + strconv.Itoa(g)
	}
	if j.requests == nil {
		j.requests = corev1.ResourceList{GPU: resource.MustParse(strconv.FormatInt(j.GPU, 10))}
	}
	p := &corev1.Pod{
		// Generation 1, as the API server sets it on create: the engine reuses the
		// requests it computed for a pod while its spec generation stays the same.
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec: corev1.PodSpec{
			SchedulerName: "muster",
			Containers: []corev1.Container{{Name: "worker", Resources: corev1.ResourceRequirements{
				Requests: j.requests, Limits: j.requests,
			}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if j.Declared > 0 {
		p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: j.Declared.String()}
	}
	key := p.Namespace + "/" + p.Name
	j.pods[i] = key
	w.pods[key] = p
	w.touch(j)
	w.podJob[key] = member{job: j, index: i}
	w.sched.SetPod(p, j.GroupKey())
}

// apply carries out a scheduler's decisions: binds start the simulated kubelet, evictions
// delete pods and let the job controller recreate them.
func (w *World) apply(binds []engine.Bind, evictions []engine.Eviction) {
	// The counts are for the timeline only: a quiet replay does not build them.
	var bound, evicted map[string]int
	var reasons map[string]string
	if !w.opts.Quiet {
		bound, evicted, reasons = map[string]int{}, map[string]int{}, map[string]string{}
	}
	for _, b := range binds {
		p := w.pods[b.Pod]
		if p == nil || p.Spec.NodeName != "" {
			continue
		}
		p = revise(p)
		p.Spec.NodeName = b.Node
		w.pods[b.Pod] = p
		w.sched.SetPod(p, b.Group)
		if j, _ := w.jobOf(b.Pod); j != nil {
			w.touch(j)
		}
		if bound != nil {
			bound[shortKey(b.Group)]++
		}
		w.startKubelet(b.Pod)
	}
	for _, name := range sortedCounts(bound) {
		w.logf("%s: %d pods bound", name, bound[name])
	}
	for _, ev := range evictions {
		if j, _ := w.jobOf(ev.Pod); j != nil {
			j.Evictions++
		}
		if w.deletePod(ev.Pod) && evicted != nil {
			evicted[shortKey(ev.Group)]++
			reasons[shortKey(ev.Group)] = ev.Reason
		}
	}
	for _, name := range sortedCounts(evicted) {
		w.logf("%s: %d pods evicted (%s)", name, evicted[name], reasons[name])
	}
}

func sortedCounts(m map[string]int) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jobOf finds the job and worker index of a pod key.
func (w *World) jobOf(key string) (*Job, int) {
	if m, ok := w.podJob[key]; ok {
		return m.job, m.index
	}
	return nil, -1
}

// member locates a pod in its job.
type member struct {
	job   *Job
	index int
}

// deletePod removes a pod; its job controller recreates it unless the job is done.
func (w *World) deletePod(key string) bool {
	if _, ok := w.pods[key]; !ok {
		return false
	}
	delete(w.pods, key)
	w.sched.RemovePod(key)
	j, i := w.jobOf(key)
	delete(w.podJob, key)
	if j == nil {
		return true
	}
	w.touch(j)
	w.checkProgress(j)
	if !j.Cancelled && j.Finished.IsZero() {
		j.gen[i]++
		w.createPod(j, i)
	}
	return true
}

// boundGPUs returns the GPUs bound to the job's live pods and how many pods are bound.
func (j *Job) boundGPUs(w *World) (int64, int) {
	var gpus int64
	n := 0
	for _, key := range j.pods {
		p := w.pods[key]
		if p == nil || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		gpus += j.GPU // every pod of a job requests j.GPU (createPod)
		n++
	}
	return gpus, n
}
