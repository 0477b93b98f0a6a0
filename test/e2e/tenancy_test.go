package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestQueueOfAnotherTeamIsNotAllowed: a group may use only a Queue whose
// namespaceSelector selects its namespace. A group of another namespace that names
// team's queue holds nothing and is Unschedulable with QueueNotAllowed, naming the queue
// and the namespace, with a Warning Event; a group of team's namespace is admitted. A
// group that names no queue while two select its namespace waits with QueueAmbiguous.
func TestQueueOfAnotherTeamIsNotAllowed(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns, stranger, shared := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "tenancy", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	team := ns + "-team"
	createQueue(t, c, team, 4, &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}})
	labelNamespace(t, env, ns, "team", team)
	labelNamespace(t, env, shared, "team", team)
	labelNamespace(t, env, shared, "shared", team)
	createQueue(t, c, team+"-shared", 4, &metav1.LabelSelector{MatchLabels: map[string]string{"shared": team}})
	closed := createQueue(t, c, team+"-closed", 4, nil, func(q *musterv1alpha1.Queue) { q.Spec.NamespaceSelector = nil })
	startMuster(t, env, musterOptions{})
	wantActive(t, env, c, team, metav1.ConditionTrue, "Ready")
	wantActive(t, env, c, closed.Name, metav1.ConditionFalse, "NoNamespaceSelector")
	inTeam := map[string]string{musterv1alpha1.QueueAnnotation: team}

	(pytorchJob{ns: stranger, name: "spend", workers: 0, groupAnnotations: inTeam}).create(t, env, c)
	cond := waitCondition(t, env, c, stranger, "spend", "Unschedulable", metav1.ConditionTrue)
	want := fmt.Sprintf("queue %q does not admit namespace %q: its spec.namespaceSelector does not select the namespace", team, stranger)
	if cond.Reason != "QueueNotAllowed" || cond.Message != want {
		t.Errorf("Unschedulable: expected QueueNotAllowed %q, found %s %q", want, cond.Reason, cond.Message)
	}
	waitGroupEvents(t, env, stranger, "spend", "QueueNotAllowed")
	(pytorchJob{ns: ns, name: "own", workers: 0, groupAnnotations: inTeam}).create(t, env, c)
	waitCondition(t, env, c, ns, "own", "PodsReady", metav1.ConditionTrue)
	if s := stateOf(t, env, stranger, "spend"); s.holding != 0 {
		t.Errorf("the group refused its queue holds %d pods bound, expected none", s.holding)
	}

	(pytorchJob{ns: shared, name: "unnamed", workers: 0}).create(t, env, c)
	cond = waitCondition(t, env, c, shared, "unnamed", "Unschedulable", metav1.ConditionTrue)
	if cond.Reason != "QueueAmbiguous" || !strings.Contains(cond.Message, team+", "+team+"-shared") {
		t.Errorf("Unschedulable: expected QueueAmbiguous naming %s and %s-shared, found %s %q", team, team, cond.Reason, cond.Message)
	}
	// explain as the tenant of the refused group's namespace, with the shipped role (and
	// the rules the built-in view role aggregates: pods, events), names the queue and
	// the fix, although the tenant may read neither nodes nor Queues.
	tenant := tenantConfig(t, env, stranger, "muster-user")
	bindRole(t, env, stranger, "system:aggregate-to-view", "tenant-"+stranger)
	tcl, err := cliClients(tenant)
	if err != nil {
		t.Fatal(err)
	}
	f, err := explain.Gather(context.Background(), tcl, "podgroup/spend", stranger, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatalf("explain as the tenant: %v", err)
	}
	r := explain.Build(f)
	if r.Verdict.Step != 4 || !strings.Contains(r.Verdict.Summary, "does not admit namespace") || !strings.Contains(r.Verdict.Fix, "namespaceSelector") || f.FitUnread == "" {
		t.Errorf("explain as the tenant: verdict step %d %q, fit unread %q; want step 4 naming the namespace, nodes unread",
			r.Verdict.Step, r.Verdict.Summary, f.FitUnread)
	}
	for _, typ := range []string{"Failed", "Evicted", "Impossible"} {
		if c, _ := groupCondition(t, c, stranger, "spend", typ); c.Message == want {
			t.Errorf("%s carries the Unschedulable message %q; each condition should say what it means", typ, c.Message)
		}
	}
}

// applyPolicy creates the admission policy of a deploy/policies file with its binding
// narrowed by match (the shared sandbox runs other tests' deliberately bad objects), and
// deletes both when the test ends.
func applyPolicy(t *testing.T, env *sandboxtest.Env, file string, match func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "policies", file))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, obj := range objs {
		if b, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); ok {
			match(b)
		}
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("%s: creating %s: %v", file, obj.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
}

// TestAdmissionPoliciesRefuseBadSettings: with deploy/policies applied, the API server
// refuses muster's malformed annotations on pods and PodGroups, and Queues that break
// an invariant, naming the field and the value; good objects pass.
func TestAdmissionPoliciesRefuseBadSettings(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	inNamespace := func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}
	}
	labelled := func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"muster-test": ns}}}
	}
	applyPolicy(t, env, "group_settings.yaml", inNamespace)
	applyPolicy(t, env, "queue_invariants.yaml", labelled)
	c := newClient(t, env.Config)

	bad := map[string]string{
		musterv1alpha1.StartTimeoutAnnotation: "5 minutes",
		musterv1alpha1.MaxRetriesAnnotation:   "-1",
		musterv1alpha1.QueueAnnotation:        "Team A",
		musterv1alpha1.TopologyAnnotation:     "rack/",
		musterv1alpha1.MinMemberAnnotation:    "0",
	}
	for key, value := range bad {
		pod := sandboxtest.Pod(ns, "bad").Annotate(key, value).Obj()
		want := fmt.Sprintf("metadata.annotations[%s]: %s: expected", key, value)
		env.WaitFor(t, "the policy to refuse "+key+"="+value, func(ctx context.Context) (bool, error) {
			_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			if err == nil {
				_ = env.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})
				return false, nil // the policy is not in effect yet
			}
			if !strings.Contains(err.Error(), want) {
				return false, fmt.Errorf("pod with %s=%q: expected an error containing %q, found %w", key, value, want, err)
			}
			return true, nil
		})
	}
	pg := &spv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pg",
		Annotations: map[string]string{musterv1alpha1.BackoffBaseAnnotation: "soon"}}, Spec: spv1alpha1.PodGroupSpec{MinMember: 1}}
	if err := c.Create(context.Background(), pg); err == nil || !strings.Contains(err.Error(), "muster.dev/backoff-base]: soon") {
		t.Errorf("PodGroup with backoff-base=soon: expected refused naming it, found %v", err)
	}
	good := sandboxtest.Pod(ns, "good").Annotate(musterv1alpha1.StartTimeoutAnnotation, "1m30s").
		Annotate(musterv1alpha1.TopologyAnnotation, "topology.kubernetes.io/zone").Annotate(musterv1alpha1.MaxRetriesAnnotation, "3").Obj()
	env.CreatePod(t, good)

	queues := map[string]func(*musterv1alpha1.QueueSpec){
		"In and NotIn need values": func(s *musterv1alpha1.QueueSpec) {
			s.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "In"}}}
		},
		"nvidia.com/gpu=8 exceeds spec.quota 4": func(s *musterv1alpha1.QueueSpec) {
			s.Cohort, s.LendingLimit = "c", corev1.ResourceList{sandbox.ResourceGPU: resourceQuantity(8)}
		},
		"cpu: not in spec.quota": func(s *musterv1alpha1.QueueSpec) {
			s.Cohort, s.BorrowingLimit = "c", corev1.ResourceList{corev1.ResourceCPU: resourceQuantity(8)}
		},
	}
	for want, mutate := range queues {
		q := &musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns + "-bad", Labels: map[string]string{"muster-test": ns}},
			Spec: musterv1alpha1.QueueSpec{Quota: corev1.ResourceList{sandbox.ResourceGPU: resourceQuantity(4)}}}
		mutate(&q.Spec)
		// The Queue policy is a binding of its own: like the pods' above, it takes
		// effect a moment after it is created.
		env.WaitFor(t, "the policy to refuse Queue ("+want+")", func(ctx context.Context) (bool, error) {
			err := c.Create(ctx, q.DeepCopy())
			if err == nil {
				_ = c.Delete(ctx, q)
				return false, nil // the policy is not in effect yet
			}
			if !strings.Contains(err.Error(), want) {
				return false, fmt.Errorf("Queue (%s): expected refused with %q, found %w", want, want, err)
			}
			return true, nil
		})
	}
	ok := &musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns + "-ok", Labels: map[string]string{"muster-test": ns}},
		Spec: musterv1alpha1.QueueSpec{Quota: corev1.ResourceList{sandbox.ResourceGPU: resourceQuantity(4)}, Cohort: "c",
			LendingLimit: corev1.ResourceList{sandbox.ResourceGPU: resourceQuantity(2)}, NamespaceSelector: &metav1.LabelSelector{}}}
	if err := c.Create(context.Background(), ok); err != nil {
		t.Errorf("a valid Queue was refused: %v", err)
	} else {
		_ = c.Delete(context.Background(), ok)
	}
}

// TestTenantRoleGrantsOwnNamespaceOnly: a tenant bound to muster-user in their
// namespace (impersonated) may read and stop their groups, and may not read another
// namespace's groups, the nodes, or the Queues, nor write a Queue.
func TestTenantRoleGrantsOwnNamespaceOnly(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	alice := tenantConfig(t, env, ns, "muster-user")
	tc := newClient(t, alice)
	c := newClient(t, env.Config)
	for _, n := range []string{ns, other} {
		pg := &spv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "job"}, Spec: spv1alpha1.PodGroupSpec{MinMember: 1}}
		if err := c.Create(context.Background(), pg); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	pg := &spv1alpha1.PodGroup{}
	env.WaitFor(t, "the tenant's RoleBinding to be in effect", func(ctx context.Context) (bool, error) {
		return tc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job"}, pg) == nil, nil
	})
	stop := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"muster.dev/stopped":"true"}}}`))
	if err := tc.Patch(ctx, pg, stop); err != nil {
		t.Errorf("stopping a group of the tenant's namespace: %v", err)
	}
	denied := map[string]error{
		"get a group of another namespace": tc.Get(ctx, client.ObjectKey{Namespace: other, Name: "job"}, &spv1alpha1.PodGroup{}),
		"list nodes":                       tc.List(ctx, &corev1.NodeList{}),
		"list Queues":                      tc.List(ctx, &musterv1alpha1.QueueList{}),
		"create a Queue":                   tc.Create(ctx, &musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns + "-mine"}}),
	}
	for what, err := range denied {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as the tenant: expected Forbidden, found %v", what, err)
		}
	}
}

// bindRole binds ClusterRole role to user in namespace ns.
func bindRole(t *testing.T, env *sandboxtest.Env, ns, role, user string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(role, ":", "-")},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding %s to %s: %v", role, user, err)
	}
	waitBound(t, env, ns, role, user)
}

// waitBound waits until the API server's authorizer has seen user's binding to
// ClusterRole role in ns: it allows the role's first rule (a RoleBinding takes a moment
// to reach the authorizer's cache).
func waitBound(t *testing.T, env *sandboxtest.Env, ns, role, user string) {
	t.Helper()
	cr, err := env.Kube.RbacV1().ClusterRoles().Get(context.Background(), role, metav1.GetOptions{})
	if err != nil || len(cr.Rules) == 0 || len(cr.Rules[0].Verbs) == 0 || len(cr.Rules[0].Resources) == 0 {
		t.Fatalf("ClusterRole %s: expected one rule at least, found %v (%v)", role, cr, err)
	}
	rule := cr.Rules[0]
	attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: rule.Verbs[0], Resource: rule.Resources[0]}
	if len(rule.APIGroups) > 0 {
		attrs.Group = rule.APIGroups[0]
	}
	env.WaitFor(t, fmt.Sprintf("%s bound to %s in %s to be in effect", role, user, ns), func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: attrs}}
		got, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, err
	})
}

// cliClients returns explain's clients for rc.
func cliClients(rc *rest.Config) (explain.Clients, error) {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return explain.Clients{}, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return explain.Clients{}, err
	}
	return explain.Clients{Kube: kube, Dynamic: dyn}, nil
}

// tenantConfig binds ClusterRole role to user "tenant-<ns>" in namespace ns and returns a
// config that impersonates that user.
func tenantConfig(t *testing.T, env *sandboxtest.Env, ns, role string) *rest.Config {
	t.Helper()
	serviceAccountConfig(t, env) // applies deploy/rbac, the user roles included
	user := "tenant-" + ns
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding %s to %s: %v", role, user, err)
	}
	waitBound(t, env, ns, role, user)
	rc := rest.CopyConfig(env.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return rc
}

// decodeAll decodes every object of a multi-document YAML file.
func decodeAll(data []byte) ([]client.Object, error) {
	var out []client.Object
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		out = append(out, obj.(client.Object))
	}
	return out, nil
}

func resourceQuantity(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// wantActive waits until a Queue's Active condition has status and reason.
func wantActive(t *testing.T, env *sandboxtest.Env, c client.Client, name string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	var last []metav1.Condition
	env.WaitFor(t, fmt.Sprintf("Queue %s Active=%s (%s)", name, status, reason), func(ctx context.Context) (bool, error) {
		q := &musterv1alpha1.Queue{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
			return false, fmt.Errorf("reading Queue %s: %w", name, err)
		}
		last = q.Status.Conditions
		for _, cond := range q.Status.Conditions {
			if cond.Type == "Active" {
				return cond.Status == status && cond.Reason == reason && cond.Message != "", nil
			}
		}
		return false, nil
	})
	t.Logf("Queue %s conditions: %+v", name, last)
}
