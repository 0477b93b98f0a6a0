package dashboard

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/source"
)

// group is one group as the dashboard sees it: its object (nil for plain groups),
// muster's lifecycle record, and its member pods.
type group struct {
	ref    source.Ref
	object client.Object
	record *musterv1alpha1.GroupLifecycle
	// recordProblem says why a record was found but not read.
	recordProblem string
	pods          []*corev1.Pod
}

// phase returns the recorded phase, or "" when muster has recorded none.
func (g *group) phase() string {
	if g.record == nil {
		return ""
	}
	return g.record.Phase
}

// since returns when the group was first seen: its object's creation, or its oldest
// member's.
func (g *group) since() time.Time {
	if g.object != nil {
		return g.object.GetCreationTimestamp().Time
	}
	var t time.Time
	for _, p := range g.pods {
		if c := p.CreationTimestamp.Time; !c.IsZero() && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	return t
}

// model is one reading of the cache: everything a page is rendered from.
type model struct {
	nodes  []corev1.Node
	pods   []corev1.Pod
	queues []musterv1alpha1.Queue
	groups map[string]*group
	// keys are the groups' keys, sorted.
	keys []string
}

// groupLists are the group object APIs, as list types of the cache.
var groupLists = []struct {
	source engine.Source
	list   func() client.ObjectList
	items  func(client.ObjectList) []client.Object
}{
	{engine.Coscheduling, func() client.ObjectList { return &spv1alpha1.PodGroupList{} }, func(l client.ObjectList) []client.Object {
		return objects(l.(*spv1alpha1.PodGroupList).Items)
	}},
	{engine.Volcano, func() client.ObjectList { return &volcanov1beta1.PodGroupList{} }, func(l client.ObjectList) []client.Object {
		return objects(l.(*volcanov1beta1.PodGroupList).Items)
	}},
	{engine.Native, func() client.ObjectList { return &schedulingv1beta1.PodGroupList{} }, func(l client.ObjectList) []client.Object {
		return objects(l.(*schedulingv1beta1.PodGroupList).Items)
	}},
}

// objects returns pointers to items as client.Objects.
func objects[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// read reads the model from r. APIs the cluster does not serve (no PodGroup CRD, no
// Queue CRD) are read as empty.
func read(ctx context.Context, r client.Reader, schedulerNames []string) (*model, error) {
	m := &model{groups: map[string]*group{}}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	m.nodes, m.pods = nodes.Items, pods.Items
	var queues musterv1alpha1.QueueList
	if err := r.List(ctx, &queues); err != nil && !explain.Unserved(err) {
		return nil, fmt.Errorf("listing Queues: %w", err)
	}
	m.queues = queues.Items
	sort.Slice(m.queues, func(i, j int) bool { return m.queues[i].Name < m.queues[j].Name })
	for _, api := range groupLists {
		l := api.list()
		if err := r.List(ctx, l); err != nil {
			if explain.Unserved(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s PodGroups: %w", api.source, err)
		}
		for _, obj := range api.items(l) {
			g := m.group(source.Ref{Source: api.source, Namespace: obj.GetNamespace(), Name: obj.GetName()})
			g.object = obj
			g.readRecord(obj.GetAnnotations())
		}
	}
	for i := range m.pods {
		p := &m.pods[i]
		if !slices.Contains(schedulerNames, p.Spec.SchedulerName) {
			continue
		}
		g := m.group(source.GroupOf(p))
		g.pods = append(g.pods, p)
		if g.object == nil && g.record == nil {
			// Plain groups and groups of one carry their record on their members.
			g.readRecord(p.Annotations)
		}
	}
	for k := range m.groups {
		m.keys = append(m.keys, k)
	}
	sort.Strings(m.keys)
	return m, nil
}

// group returns the group of ref, adding it if new.
func (m *model) group(ref source.Ref) *group {
	k := ref.Key()
	g := m.groups[k]
	if g == nil {
		g = &group{ref: ref}
		m.groups[k] = g
	}
	return g
}

// readRecord reads muster's lifecycle record from annotations, if they carry one. A
// record that does not decode (a tenant may write any annotation on its own objects) is
// kept as a problem to show, never as a state.
func (g *group) readRecord(annotations map[string]string) {
	rec, ok, err := musterv1alpha1.RecordIn(annotations)
	switch {
	case err != nil:
		g.recordProblem = fmt.Sprintf("annotation %s does not decode: %v", musterv1alpha1.LifecycleAnnotation, err)
	case ok:
		g.record = &rec
	}
}
