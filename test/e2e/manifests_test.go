package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// readManifest decodes every object of a YAML file under examples/ into its Go type.
func readManifest(t *testing.T, name string) []client.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	decode := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []client.Object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("reading examples/%s: %v", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := decode.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding a document of examples/%s: %v", name, err)
		}
		objs = append(objs, obj.(client.Object))
	}
}

// stripComments drops YAML comment lines, to tell empty documents apart.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// gang is a group built from an example manifest: its group object (nil for plain
// pods) and its member pods.
type gang struct {
	object client.Object
	pods   []*corev1.Pod
}

// gangFrom builds a group named name in namespace ns of n members from the objects of
// an example manifest: the manifest's group object renamed with its minimum set to n,
// and n copies of its first pod that join the group the way the manifest's pods do,
// each with the extra annotations.
func gangFrom(t *testing.T, objs []client.Object, ns, name string, n int, annotations map[string]string) gang {
	t.Helper()
	var g gang
	var template *corev1.Pod
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Pod:
			if template == nil {
				template = o
			}
		default:
			if g.object == nil {
				g.object = o.DeepCopyObject().(client.Object)
			}
		}
	}
	if template == nil {
		t.Fatal("expected a Pod in the manifest, found none")
	}
	if g.object != nil {
		g.object.SetNamespace(ns)
		g.object.SetName(name)
		g.object.SetOwnerReferences(nil)
		setMinimum(t, g.object, n)
	}
	for i := range n {
		p := template.DeepCopy()
		p.Namespace, p.Name = ns, fmt.Sprintf("%s-%d", name, i)
		p.OwnerReferences = nil
		joinGroup(t, p, name, n)
		for k, v := range annotations {
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, k, v)
		}
		g.pods = append(g.pods, p)
	}
	return g
}

// setMinimum sets a group object's minimum member count, scaling its minResources.
func setMinimum(t *testing.T, obj client.Object, n int) {
	t.Helper()
	scale := func(list corev1.ResourceList, from int32) {
		for name, q := range list {
			list[name] = *resource.NewMilliQuantity(q.MilliValue()*int64(n)/int64(from), q.Format)
		}
	}
	switch o := obj.(type) {
	case *volcanov1beta1.PodGroup:
		if o.Spec.MinResources != nil {
			scale(*o.Spec.MinResources, o.Spec.MinMember)
		}
		o.Spec.MinMember = int32(n)
	case *spv1alpha1.PodGroup:
		scale(o.Spec.MinResources, o.Spec.MinMember)
		o.Spec.MinMember = int32(n)
	case *schedulingv1beta1.PodGroup:
		if o.Spec.SchedulingPolicy.Gang == nil {
			t.Fatalf("expected a gang policy in PodGroup %s, found none", o.Name)
		}
		o.Spec.SchedulingPolicy.Gang.MinCount = int32(n)
	default:
		t.Fatalf("expected a PodGroup, found %T", obj)
	}
}

// joinGroup makes p join group name the way it joined its manifest's group.
func joinGroup(t *testing.T, p *corev1.Pod, name string, n int) {
	t.Helper()
	switch ref := source.GroupOf(p); ref.Source {
	case engine.Native:
		p.Spec.SchedulingGroup.PodGroupName = &name
	case engine.Coscheduling:
		p.Labels[musterv1alpha1.CoschedulingPodGroupLabel] = name
	case engine.Volcano:
		p.Annotations[musterv1alpha1.VolcanoGroupNameAnnotation] = name
	case engine.Labels:
		p.Labels[musterv1alpha1.GroupLabel] = name
		p.Annotations[musterv1alpha1.MinMemberAnnotation] = fmt.Sprint(n)
	default:
		t.Fatalf("expected the manifest's pod to join a group, found %s", ref)
	}
}

// create creates the group object, then the pods, and deletes them when the test ends.
func (g gang) create(t *testing.T, c client.Client) {
	t.Helper()
	objs := []client.Object{}
	if g.object != nil {
		objs = append(objs, g.object)
	}
	for _, p := range g.pods {
		objs = append(objs, p)
	}
	createAll(t, c, objs)
}

// createAll creates objs in order and deletes them when the test ends.
func createAll(t *testing.T, c client.Client, objs []client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
		}
		t.Cleanup(func() {
			// Background propagation, as kubectl deletes: with a batch Job's default
			// (orphan), the Job would wait for a garbage collector, and the sandbox
			// runs none.
			err := c.Delete(ctx, obj, client.GracePeriodSeconds(0), client.PropagationPolicy(metav1.DeletePropagationBackground))
			if client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
			}
			// Nor does anything delete a Job's pods, then: the test does.
			if job, ok := obj.(*batchv1.Job); ok {
				err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(job.Namespace),
					client.MatchingLabels{batchv1.JobNameLabel: job.Name}, client.GracePeriodSeconds(0))
				if err != nil {
					t.Errorf("deleting the pods of Job %s/%s: %v", job.Namespace, job.Name, err)
				}
			}
		})
	}
}

// podState counts the pods of one group: bound and not finished, Ready, Succeeded, all.
type podState struct{ holding, ready, succeeded, total int }

// podsOf counts, from one list of namespace ns, the pods of each group: those whose
// names start with the group's name and "-".
func podsOf(t *testing.T, c client.Client, ns string, groups ...string) map[string]podState {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing pods of %s: %v", ns, err)
	}
	out := map[string]podState{}
	for _, p := range pods.Items {
		for _, g := range groups {
			if strings.HasPrefix(p.Name, g+"-") {
				out[g] = countPod(out[g], &p)
			}
		}
	}
	return out
}

// countPod adds p to s.
func countPod(s podState, p *corev1.Pod) podState {
	s.total++
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		s.succeeded++
	case p.Spec.NodeName != "" && p.Status.Phase != corev1.PodFailed:
		s.holding++
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			s.ready++
		}
	}
	return s
}

// describePods lists the pods of ns, one a line: name, node, phase, reason, Ready.
func describePods(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		return fmt.Sprintf("listing pods of %s: %v", ns, err)
	}
	var b strings.Builder
	for _, p := range pods.Items {
		ready := corev1.ConditionUnknown
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				ready = cond.Status
			}
		}
		fmt.Fprintf(&b, "%s node=%q phase=%s reason=%q ready=%s\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Reason, ready)
	}
	return b.String()
}
