package source

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/engine"
)

// testNamespace is the namespace of every fixture.
const testNamespace = "ml"

// podOpt adjusts a fixture pod.
type podOpt func(*corev1.Pod)

// pod returns a pod of muster's in testNamespace, adjusted by opts.
func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec:       corev1.PodSpec{SchedulerName: "muster"},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func label(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func annotate(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func schedulingGroup(name string) podOpt {
	return func(p *corev1.Pod) { p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name} }
}

func scheduler(name string) podOpt { return func(p *corev1.Pod) { p.Spec.SchedulerName = name } }

func priority(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func priorityClass(name string) podOpt {
	return func(p *corev1.Pod) { p.Spec.PriorityClassName = name }
}

// pods returns n pods named prefix-0 … prefix-(n-1), each adjusted by opts.
func pods(prefix string, n int, opts ...podOpt) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = pod(prefix+"-"+strconv.Itoa(i), opts...)
	}
	return out
}

func dur(s string) *time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &d
}

func ptr[T any](v T) *T { return &v }

// classes resolves the PriorityClasses of the fixtures.
var classes PriorityResolver = func(name string) (PriorityClass, bool) {
	pc, ok := map[string]PriorityClass{
		"high": {Value: 1000}, "low": {Value: -10}, "polite": {Value: 500, PreemptionPolicy: corev1.PreemptNever},
	}[name]
	return pc, ok
}

// want returns the spec expected for source/testNamespace/name with MinMember minMember,
// adjusted by edit.
func want(source engine.Source, name string, minMember int, edit func(*engine.GroupSpec)) engine.GroupSpec {
	s := engine.GroupSpec{
		Key: string(source) + "/" + testNamespace + "/" + name, Source: source,
		Namespace: testNamespace, Name: name, MinMember: minMember,
	}
	if edit != nil {
		edit(&s)
	}
	return s
}
