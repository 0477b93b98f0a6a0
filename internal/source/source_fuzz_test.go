package source

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/engine"
)

// The fuzz targets of this file decode a group object (and member pods) from JSON, as the
// API server would hand them to muster, translate it, and check the translation against
// checkSpec's properties. Their seeds are in testdata/fuzz/FuzzX.

// fuzzClasses is the PriorityClass resolver of the fuzz targets.
func fuzzClasses(name string) (PriorityClass, bool) {
	switch name {
	case "high":
		return PriorityClass{Value: 1000}, true
	case "never":
		return PriorityClass{Value: 10, PreemptionPolicy: corev1.PreemptNever}, true
	}
	return PriorityClass{}, false
}

// decodePods decodes a JSON list of pods; nil when data is not one.
func decodePods(data []byte) []*corev1.Pod {
	var list []corev1.Pod
	if json.Unmarshal(data, &list) != nil {
		return nil
	}
	pods := make([]*corev1.Pod, len(list))
	for i := range list {
		pods[i] = &list[i]
	}
	return pods
}

// FuzzFromCoscheduling: a scheduler-plugins PodGroup and its members.
func FuzzFromCoscheduling(f *testing.F) {
	f.Fuzz(func(t *testing.T, group, members []byte) {
		pg := &spv1alpha1.PodGroup{}
		if json.Unmarshal(group, pg) != nil {
			return
		}
		pods := decodePods(members)
		translate := func() engine.GroupSpec { return FromCoscheduling(pg, pods, fuzzClasses) }
		spec := checkSpec(t, translate, engine.Coscheduling, pg.Namespace, pg.Name, pg.Annotations)
		if s := pg.Spec.ScheduleTimeoutSeconds; s != nil && *s >= 1 && pg.Annotations[musterv1alpha1.StartTimeoutAnnotation] == "" &&
			len(spec.Invalid) == 0 && *spec.Policy.StartTimeout != time.Duration(*s)*time.Second {
			t.Fatalf("spec.scheduleTimeoutSeconds %d became a start timeout of %s", *s, *spec.Policy.StartTimeout)
		}
	})
}

// FuzzFromVolcano: a Volcano PodGroup.
func FuzzFromVolcano(f *testing.F) {
	f.Fuzz(func(t *testing.T, group []byte) {
		pg := &volcanov1beta1.PodGroup{}
		if json.Unmarshal(group, pg) != nil {
			return
		}
		translate := func() engine.GroupSpec { return FromVolcano(pg, fuzzClasses) }
		spec := checkSpec(t, translate, engine.Volcano, pg.Namespace, pg.Name, pg.Annotations)
		if pc, ok := fuzzClasses(pg.Spec.PriorityClassName); ok && spec.Priority != pc.Value {
			t.Fatalf("priorityClassName %q gave priority %d, want %d", pg.Spec.PriorityClassName, spec.Priority, pc.Value)
		}
		sum := 0
		for task, n := range spec.TaskMinimums {
			if n <= 0 || int32(n) != pg.Spec.MinTaskMember[task] {
				t.Fatalf("task %q minimum %d from minTaskMember %d", task, n, pg.Spec.MinTaskMember[task])
			}
			sum += n
		}
		if sum > max(spec.MinMember, 0) {
			t.Fatalf("task minimums %v sum to more than minMember %d", spec.TaskMinimums, spec.MinMember)
		}
		for task, n := range pg.Spec.MinTaskMember {
			if n < 0 && !slices.ContainsFunc(spec.Invalid, func(p string) bool { return strings.Contains(p, strconv.Quote(task)) }) {
				t.Fatalf("minTaskMember %q: %d recorded no problem: %v", task, n, spec.Invalid)
			}
		}
	})
}

// FuzzFromNative: a Kubernetes 1.37 PodGroup.
func FuzzFromNative(f *testing.F) {
	f.Fuzz(func(t *testing.T, group []byte) {
		pg := &schedulingv1beta1.PodGroup{}
		if json.Unmarshal(group, pg) != nil {
			return
		}
		translate := func() engine.GroupSpec { return FromNative(pg, fuzzClasses) }
		spec := checkSpec(t, translate, engine.Native, pg.Namespace, pg.Name, pg.Annotations)
		if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 1 && len(spec.Invalid) == 0 &&
			pg.Annotations[musterv1alpha1.TopologyAnnotation] == "" {
			t.Fatalf("%d topology constraints taken as %q, with no problem recorded", len(c.Topology), spec.Topology.Required)
		}
		if IsBasic(pg) && spec.MinMember != 1 {
			t.Fatalf("a basic PodGroup has minMember %d, want 1", spec.MinMember)
		}
	})
}

// FuzzFromLabels: plain pods, with a group name (FromLabels) or with none (FromSingle), and
// the group GroupOf finds for each pod.
func FuzzFromLabels(f *testing.F) {
	f.Fuzz(func(t *testing.T, members []byte) {
		pods := decodePods(members)
		if len(pods) == 0 {
			return
		}
		for _, p := range pods {
			if p.Name == "" {
				return // the API server gives every pod a name
			}
			ref := GroupOf(p)
			if ref.Name == "" || ref.Namespace != p.Namespace {
				t.Fatalf("pod %s/%s is in group %+v: want a name and the pod's namespace", p.Namespace, p.Name, ref)
			}
			if ref.Source == engine.Single {
				translate := func() engine.GroupSpec { return FromSingle(p, fuzzClasses) }
				checkSpec(t, translate, engine.Single, p.Namespace, p.Name, p.Annotations)
			}
		}
		ref := Ref{Source: engine.Labels, Namespace: pods[0].Namespace, Name: "plain"}
		translate := func() engine.GroupSpec { return FromLabels(ref, pods, fuzzClasses) }
		agreed := map[string]string{}
		for _, key := range groupAnnotations {
			if v, ok := agreedValue(pods, key); ok {
				agreed[key] = v
			}
		}
		checkSpec(t, translate, engine.Labels, ref.Namespace, ref.Name, agreed)
	})
}

// agreedValue returns the value the pods that carry annotation key agree on.
func agreedValue(pods []*corev1.Pod, key string) (string, bool) {
	var value string
	found := false
	for _, p := range pods {
		if v, ok := p.Annotations[key]; ok {
			if found && v != value {
				return "", false
			}
			value, found = v, true
		}
	}
	return value, found
}

// groupAnnotations are the per-group annotations (see the package documentation).
var groupAnnotations = []string{
	musterv1alpha1.QueueAnnotation, musterv1alpha1.StartTimeoutAnnotation, musterv1alpha1.RecoveryTimeoutAnnotation,
	musterv1alpha1.MaxRetriesAnnotation, musterv1alpha1.BackoffBaseAnnotation, musterv1alpha1.BackoffMaxAnnotation,
	musterv1alpha1.TopologyAnnotation, musterv1alpha1.TopologyPreferredAnnotation,
}

// checkSpec checks a translation's properties and returns the spec:
//   - it is deterministic, and keyed SOURCE/namespace/name;
//   - every problem it records names a field (a spec path, an annotation or a pod);
//   - a malformed per-group annotation among annotations is recorded, naming it;
//   - a spec with no problem is one the engine can schedule: minMember at least 1, a
//     queue name, label keys for topology, positive durations and a backoff cap no
//     lower than its base, and the annotations' values where they are set.
func checkSpec(t *testing.T, translate func() engine.GroupSpec, src engine.Source, ns, name string, annotations map[string]string) engine.GroupSpec {
	t.Helper()
	spec := translate()
	if d := cmp.Diff(spec, translate()); d != "" {
		t.Fatalf("translating twice gave different specs (-first +second):\n%s", d)
	}
	if want := fmt.Sprintf("%s/%s/%s", src, ns, name); spec.Key != want || spec.Source != src {
		t.Fatalf("spec key %q source %q, want %q", spec.Key, spec.Source, want)
	}
	for _, problem := range spec.Invalid {
		if !namesAField(problem) {
			t.Fatalf("problem %q names no field", problem)
		}
	}
	for _, key := range groupAnnotations {
		v, ok := annotations[key]
		if ok && !annotationValid(key, v) && !mentions(spec.Invalid, annotationField(key)) {
			t.Fatalf("%s: %q is malformed but not recorded; problems: %q", key, v, spec.Invalid)
		}
	}
	if len(spec.Invalid) == 0 {
		checkSchedulable(t, spec, annotations)
	}
	return spec
}

// checkSchedulable checks a spec that records no problem.
func checkSchedulable(t *testing.T, spec engine.GroupSpec, annotations map[string]string) {
	t.Helper()
	if spec.MinMember < 1 {
		t.Fatalf("minMember %d with no problem recorded", spec.MinMember)
	}
	if spec.Queue != "" && len(validation.IsDNS1123Subdomain(spec.Queue)) > 0 {
		t.Fatalf("queue %q is not a Queue name, and no problem is recorded", spec.Queue)
	}
	for _, key := range []string{spec.Topology.Required, spec.Topology.Preferred} {
		if key != "" && len(validation.IsQualifiedName(key)) > 0 {
			t.Fatalf("topology key %q is not a label key, and no problem is recorded", key)
		}
	}
	p := spec.Policy
	for _, d := range []*time.Duration{p.StartTimeout, p.RecoveryTimeout, p.BackoffBase, p.BackoffMax} {
		if d != nil && *d <= 0 {
			t.Fatalf("policy duration %s with no problem recorded", *d)
		}
	}
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		t.Fatalf("max retries %d with no problem recorded", *p.MaxRetries)
	}
	if p.BackoffBase != nil && p.BackoffMax != nil && *p.BackoffMax < *p.BackoffBase {
		t.Fatalf("backoff cap %s below its base %s with no problem recorded", *p.BackoffMax, *p.BackoffBase)
	}
	if v, ok := annotations[musterv1alpha1.QueueAnnotation]; ok && spec.Queue != v {
		t.Fatalf("queue %q, but %s says %q", spec.Queue, musterv1alpha1.QueueAnnotation, v)
	}
	if v, ok := annotations[musterv1alpha1.TopologyAnnotation]; ok && spec.Topology.Required != v {
		t.Fatalf("required topology %q, but %s says %q", spec.Topology.Required, musterv1alpha1.TopologyAnnotation, v)
	}
}

// namesAField reports whether a recorded problem begins with the field it is about.
func namesAField(problem string) bool {
	for _, prefix := range []string{"spec.", "metadata.annotations[", "pod ", "owner "} {
		if strings.HasPrefix(problem, prefix) {
			return true
		}
	}
	return false
}

// mentions reports whether some problem names field.
func mentions(problems []string, field string) bool {
	for _, p := range problems {
		if strings.Contains(p, field) {
			return true
		}
	}
	return false
}

// annotationValid is the reference check of a per-group annotation's value, written apart
// from the code under test.
func annotationValid(key, v string) bool {
	switch key {
	case musterv1alpha1.QueueAnnotation:
		return len(validation.IsDNS1123Subdomain(v)) == 0
	case musterv1alpha1.MaxRetriesAnnotation:
		n, err := strconv.Atoi(v)
		return err == nil && n >= 0
	case musterv1alpha1.TopologyAnnotation, musterv1alpha1.TopologyPreferredAnnotation:
		return len(validation.IsQualifiedName(v)) == 0
	}
	d, err := time.ParseDuration(v)
	return err == nil && d > 0
}
