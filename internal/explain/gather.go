package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/source"
)

// Clients read the cluster from the API server: the Reader of `muster explain`.
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Mapper resolves the resources of kinds (see Reader.Resource); nil means one over
	// Kube's discovery, made for each call (NewClients makes one for all).
	Mapper meta.RESTMapper
}

var queueGVR = musterv1alpha1.GroupVersion.WithResource("queues")

// ErrUsage is returned for a target explain cannot parse.
var ErrUsage = errors.New("usage")

// Gather collects the facts about target ("pytorchjob/bert", "podgroup/bert", or a plain
// group's name) in namespace. schedulerNames are the names muster serves, its
// Configuration's schedulerName first; none, or an empty one, is an error.
func Gather(ctx context.Context, c Reader, target, namespace string, schedulerNames []string, now time.Time) (Facts, error) {
	if len(schedulerNames) == 0 || slices.Contains(schedulerNames, "") {
		return Facts{}, fmt.Errorf("schedulerNames: %q: expected muster's schedulerName, then its additional ones, none empty", schedulerNames)
	}
	kind, name, found := strings.Cut(target, "/")
	if !found {
		kind, name = "group", target
	}
	kind = strings.ToLower(kind)
	f := Facts{Kind: kind, Name: name, Namespace: namespace, SchedulerNames: schedulerNames, Now: now, GroupServed: true}
	pods, err := c.Pods(ctx, namespace)
	if err != nil {
		return f, fmt.Errorf("listing pods in %s: %w", namespace, err)
	}
	var obj *unstructured.Unstructured
	switch {
	case kind == "podgroup" || kind == "pg":
		obj = f.findGroupObject(ctx, c, name)
	case kind == "group":
		f.setPlain(name)
	default:
		k := source.OwnerKindNamed(kind)
		if k == nil {
			return f, fmt.Errorf("%w: kind %q: expected one of %s, podgroup, or a plain group name",
				ErrUsage, kind, strings.Join(source.OwnerKindNames(), ", "))
		}
		f.Parent, f.ParentProblem, f.ParentUnserved = getParent(ctx, c, k, namespace, name)
		if f.Parent == nil {
			break
		}
		// The group is the one the parent's pods join (a batch Job's pods may form a
		// plain group, or name a PodGroup of another name); before any pod exists, a
		// group object named after the parent, as the training operators create.
		ref, ok := groupOfParent(f.Parent, pods)
		if !ok {
			// No pod now (a Job creates its pods again after a backoff): the group
			// its pod template joins.
			ref, ok = groupOfTemplate(f.Parent)
			f.TemplateGroup = ok
		}
		switch {
		case !ok:
			obj = f.findGroupObject(ctx, c, name)
		case ref.Source == engine.Labels:
			f.setPlain(ref.Name)
		default:
			obj = f.findGroupObject(ctx, c, ref.Name, ref.Source)
		}
	}
	members := membersOf(&f, pods)
	f.Members = members
	if f.Parent != nil {
		f.Outside = outside(f.Parent, pods, members)
	}
	f.translate(obj)
	if f.Spec.Source == engine.Labels {
		f.GroupFound = len(members) > 0
	}
	source.CheckMembers(&f.Spec, members, f.Parent, schedulerNames)
	f.Lifecycle = lifecycleOf(obj, members)
	if f.Lifecycle == nil && f.TemplateGroup {
		// A Job muster suspended carries its group's record (see SuspendedAnnotation).
		f.Lifecycle = lifecycleOf(f.Parent, nil)
	}
	if f.Lifecycle != nil && f.Lifecycle.Queue != "" {
		f.Queue = getQueue(ctx, c, f.Lifecycle.Queue)
	}
	if err := f.fit(ctx, c); err != nil {
		return f, err
	}
	f.Claims = claimsOf(ctx, c, members)
	events, err := c.Events(ctx, namespace)
	if err == nil {
		f.PodEvents = events
	}
	return f, nil
}

// getParent reads the parent object of kind k, at the version of it the cluster serves
// (resolved through discovery), or says why it cannot: unserved is set when the cluster
// does not serve the kind.
func getParent(ctx context.Context, c Reader, k *source.OwnerKind, ns, name string) (parent *unstructured.Unstructured, problem string, unserved bool) {
	gvr, err := c.Resource(k.GroupKind, k.Versions...)
	switch {
	case meta.IsNoMatchError(err):
		return nil, fmt.Sprintf("the cluster does not serve kind %s (%s, versions %s)",
			k.GroupKind.Kind, k.GroupKind.Group, strings.Join(k.Versions, ", ")), true
	case err != nil:
		return nil, err.Error(), false
	}
	u, err := c.Object(ctx, gvr, ns, name)
	switch {
	case err == nil:
		return u, "", false
	case apierrors.IsNotFound(err) && isResourceMissing(err):
		return nil, fmt.Sprintf("the cluster does not serve %s", gvr.GroupResource()), true
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("%s %s/%s not found", gvr.Resource, ns, name), false
	}
	return nil, fmt.Sprintf("reading %s %s/%s: %v", gvr.Resource, ns, name, err), false
}

// isResourceMissing tells "no such resource type" from "no such object".
func isResourceMissing(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		d := status.Status().Details
		return d == nil || d.Name == ""
	}
	return false
}

// setPlain makes f describe the plain group name (pods labelled muster.dev/group).
func (f *Facts) setPlain(name string) {
	f.GroupAPI = "plain group (label " + musterv1alpha1.GroupLabel + ")"
	f.Spec = engine.GroupSpec{Source: engine.Labels, Namespace: f.Namespace, Name: name}
}

// groupOfParent returns the group that the pods of parent join: the pods it controls,
// or, for a JobSet, the pods labelled with its name (its Jobs control them). When they
// join several, the one most of them join wins (ties: the first key). ok is false when
// none of its pods joins a group.
func groupOfParent(parent *unstructured.Unstructured, pods []corev1.Pod) (ref source.Ref, ok bool) {
	count := map[source.Ref]int{}
	for i := range pods {
		p := &pods[i]
		owned := p.Labels[jobSetNameLabel] == parent.GetName() && parent.GetKind() == "JobSet"
		if c := metav1.GetControllerOf(p); c != nil && c.UID == parent.GetUID() {
			owned = true
		}
		if r := source.GroupOf(p); owned && r.Source != engine.Single {
			count[r]++
		}
	}
	for r, n := range count {
		if !ok || n > count[ref] || n == count[ref] && r.Key() < ref.Key() {
			ref, ok = r, true
		}
	}
	return ref, ok
}

// groupOfTemplate returns the group that the pods of a batch Job will join, read from
// its pod template; ok is false for other kinds and for a template that joins none.
func groupOfTemplate(parent *unstructured.Unstructured) (ref source.Ref, ok bool) {
	if parent.GetAPIVersion() != "batch/v1" || parent.GetKind() != "Job" {
		return ref, false
	}
	raw, found, err := unstructured.NestedMap(parent.Object, "spec", "template")
	if err != nil || !found {
		return ref, false
	}
	var tmpl corev1.PodTemplateSpec
	if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tmpl) != nil {
		return ref, false
	}
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Namespace = parent.GetNamespace()
	if ref = source.GroupOf(pod); ref.Source == engine.Single {
		return ref, false
	}
	return ref, true
}

// jobSetNameLabel is the label JobSet puts on the pods of its Jobs.
const jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"

// findGroupObject looks for a group object named name in each group API (or in those of
// the given sources only), first found wins.
func (f *Facts) findGroupObject(ctx context.Context, c Reader, name string, sources ...engine.Source) *unstructured.Unstructured {
	all := source.GroupAPIs()
	apis := slices.DeleteFunc(slices.Clone(all), func(api source.GroupAPI) bool {
		return len(sources) > 0 && !slices.Contains(sources, api.Source)
	})
	if len(apis) == 0 {
		apis = all[:1]
	}
	// Not found, the group is reported as missing from the first API looked in.
	f.GroupAPI, f.Spec = apis[0].Name(), engine.GroupSpec{Source: apis[0].Source, Namespace: f.Namespace, Name: name}
	for _, api := range apis {
		u, err := c.Object(ctx, api.Resource, f.Namespace, name)
		if err != nil {
			continue
		}
		f.GroupAPI, f.GroupFound = api.Name(), true
		f.Spec = engine.GroupSpec{Source: api.Source, Namespace: f.Namespace, Name: name}
		return u
	}
	return nil
}

// membersOf returns the pods that belong to the group f describes.
func membersOf(f *Facts, pods []corev1.Pod) []*corev1.Pod {
	key := source.Ref{Source: f.Spec.Source, Namespace: f.Namespace, Name: f.Spec.Name}.Key()
	var out []*corev1.Pod
	for i := range pods {
		if source.GroupOf(&pods[i]).Key() == key {
			out = append(out, &pods[i])
		}
	}
	return out
}

// outside returns the parent's pods (controlled by it, or by a Job it controls) that are
// not members: a launcher left out of the group, typically.
func outside(parent *unstructured.Unstructured, pods []corev1.Pod, members []*corev1.Pod) []*corev1.Pod {
	in := map[string]bool{}
	for _, p := range members {
		in[p.Name] = true
	}
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if in[p.Name] {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == parent.GetUID() {
			out = append(out, p)
		}
	}
	return out
}

// translate reads the group object (or the plain group's pods) as muster does.
func (f *Facts) translate(obj *unstructured.Unstructured) {
	var spec engine.GroupSpec
	switch {
	case obj == nil && f.Spec.Source == engine.Labels && len(f.Members) > 0:
		spec = source.FromLabels(source.GroupOf(f.Members[0]), f.Members, nil)
	case obj == nil:
		f.Spec.Key = source.Ref{Source: f.Spec.Source, Namespace: f.Namespace, Name: f.Spec.Name}.Key()
		return
	default:
		// A basic Native PodGroup translates too (MinMember 1, each member alone).
		if api := source.APIOf(f.Spec.Source); api != nil {
			if typed, err := api.Decode(obj); err == nil {
				spec, _ = api.Translate(typed, f.Members, nil)
			}
		}
	}
	if spec.Key != "" {
		f.Spec = spec
	}
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// lifecycleOf reads muster's lifecycle record from the group object, or from a member pod
// for plain groups: the first that has one. A record that does not decode is none.
func lifecycleOf(obj *unstructured.Unstructured, members []*corev1.Pod) *musterv1alpha1.GroupLifecycle {
	var holders []map[string]string
	if obj != nil {
		holders = append(holders, obj.GetAnnotations())
	}
	for _, p := range members {
		holders = append(holders, p.Annotations)
	}
	for _, annotations := range holders {
		rec, ok, err := musterv1alpha1.RecordIn(annotations)
		switch {
		case err != nil:
			return nil
		case ok:
			return &rec
		}
	}
	return nil
}

func getQueue(ctx context.Context, c Reader, name string) *musterv1alpha1.Queue {
	u, err := c.Object(ctx, queueGVR, "", name)
	if err != nil {
		return nil
	}
	var q musterv1alpha1.Queue
	if fromUnstructured(u, &q) != nil {
		return nil
	}
	return &q
}

// fit answers the what-if "would the queued group's unplaced members fit the cluster as
// it is now?" by running placement on a snapshot read through c. It is not muster's
// decision (the record holds that), and it is asked only of a Queued group: an
// Impossible group's recorded diagnosis says all there is until its nodes change.
func (f *Facts) fit(ctx context.Context, c Reader) error {
	if f.Lifecycle == nil || f.Lifecycle.Phase != "Queued" {
		return nil
	}
	nodes, err := c.Nodes(ctx)
	if apierrors.IsForbidden(err) {
		f.askMuster(ctx, c, "listing the cluster's nodes")
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	all, err := c.Pods(ctx, "")
	if apierrors.IsForbidden(err) {
		f.askMuster(ctx, c, "listing every namespace's pods")
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	snap := cluster.FromLists(nodes, all)
	var members []placement.Member
	pending := map[string]int{}
	for _, p := range f.Members {
		if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
			task := p.Annotations[engine.TaskAnnotation]
			members = append(members, placement.Member{Name: p.Namespace + "/" + p.Name, Pod: p, Task: task})
			pending[task]++
		}
	}
	if len(members) == 0 {
		return nil
	}
	g := placement.Group{Name: f.Spec.Key, MinMember: min(f.Spec.MinMember, len(members)), Members: members, Topology: f.Spec.Topology,
		TaskMinimums: f.pendingTaskMinimums(pending)}
	plan, diag := placement.Place(snap, g, placement.Options{})
	if plan == nil {
		f.Fit = diag
		return nil
	}
	plan.Revert()
	f.FitsNow = true
	return nil
}

// pendingTaskMinimums is what the group's task minimums ask of its pending members: each
// task's minimum less its members bound already, at most its pending members (as the
// what-if asks for at most the pending members in all), nil when none is asked.
func (f *Facts) pendingTaskMinimums(pending map[string]int) map[string]int {
	bound := map[string]int{}
	for _, p := range f.Members {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
			bound[p.Annotations[engine.TaskAnnotation]]++
		}
	}
	var out map[string]int
	for task, n := range f.Spec.TaskMinimums {
		if n = min(n-bound[task], pending[task]); n > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[task] = n
		}
	}
	return out
}

// askMuster fills the what-if (Fit, FitsNow) and Queue from muster's visibility API when
// the caller's rights do not include what (what the what-if needs to read), or says in
// FitUnread why it could not.
func (f *Facts) askMuster(ctx context.Context, c Reader, what string) {
	v, ok := c.(visibility)
	if !ok {
		f.FitUnread = "your rights do not include " + what + ": no what-if placement now; the reason above is muster's recorded diagnosis"
		return
	}
	e, err := v.Explanation(ctx, f.Namespace, f.Spec.Name, f.Spec.Source)
	if err != nil {
		f.FitUnread = fmt.Sprintf("your rights do not include %s, and muster's visibility API (%s) did not answer: %v; "+
			"no what-if placement now; the reason above is muster's recorded diagnosis", what, VisibilityGroup, err)
		return
	}
	f.Fit, f.FitsNow = e.Fit, e.FitsNow
	if f.Queue == nil {
		f.Queue = e.Queue
	}
	f.FitFrom = fmt.Sprintf("what-if computed by muster's visibility API at %s (your rights do not include %s)",
		e.Computed.UTC().Format(time.RFC3339), what)
}
