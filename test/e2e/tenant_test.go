package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// tenantClient returns a clientset that impersonates user, who may do anything to
// pods and ConfigMaps of namespace ns and nothing else, once that Role is in effect.
func tenantClient(t *testing.T, env *sandboxtest.Env, ns, user string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"*"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := env.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the tenant's Role: %v", err)
	}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the tenant's RoleBinding: %v", err)
	}
	rc := rest.CopyConfig(env.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "the tenant's Role in effect", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	return kube
}

// untrustedEvent waits until muster has recorded an UntrustedRecord Event on the
// object ns/name, and returns its note.
func untrustedEvent(t *testing.T, env *sandboxtest.Env, ns, name string) string {
	t.Helper()
	var note string
	env.WaitFor(t, "an UntrustedRecord Event on "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		list, err := env.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.Reason == controller.ReasonUntrustedRecord && ev.Regarding.Name == name {
				note = ev.Note
				return true, nil
			}
		}
		return false, nil
	})
	return note
}

// waitScheduling waits until muster binds a pod of its own in ns: it has finished its
// recovery and schedules.
func waitScheduling(t *testing.T, env *sandboxtest.Env, ns string) {
	t.Helper()
	p := env.CreatePod(t, sandboxtest.Pod(ns, "sentinel").SchedulerName("muster").Obj())
	env.WaitForPod(t, p, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
}

// evilPod is the pod of the attack: muster's, on a chosen node, with the node's root
// filesystem mounted.
func evilPod(ns, name, node string) *corev1.Pod {
	p := sandboxtest.Pod(ns, name).SchedulerName("muster").Obj()
	p.Spec.NodeName = node
	p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}
	return p
}

// TestForgedRecreateRecordIsIgnored: a tenant of namespace A writes a recreate record
// for a pod in namespace B (bound to a node, mounting its root filesystem), as a
// ConfigMap of A; the tenant cannot write one in muster's namespace; and a record in
// muster's namespace that muster did not sign (written by an administrator's client)
// is ignored with an UntrustedRecord Event. No pod appears in B, and B's ConfigMap of
// the record's name is left alone. Before, a restarted muster created the pod in B
// and deleted B's ConfigMap.
func TestForgedRecreateRecordIsIgnored(t *testing.T) {
	env := sandboxtest.Shared(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "tenant-rec", Count: 1, CPU: "16", Memory: "64Gi"})
	a, b := env.Namespace(t), env.Namespace(t)
	if err := ensureNamespace(env.Kube, musterNamespace); err != nil {
		t.Fatal(err)
	}
	tenant := tenantClient(t, env, a, "tenant-a")
	ctx := context.Background()
	record := func(ns, name string, pod *corev1.Pod) *corev1.ConfigMap {
		data, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{controller.RecreateLabel: "true"}},
			Data:       map[string]string{"pod": string(data), "uid": "0", "signature": "Zm9yZ2Vk"},
		}
	}
	const victim = "muster-recreate-evil"
	if _, err := env.Kube.CoreV1().ConfigMaps(b).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: victim, Namespace: b}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tenant.CoreV1().ConfigMaps(a).Create(ctx, record(a, victim, evilPod(b, "evil", nodes[0])), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant writing a ConfigMap in its namespace: %v", err)
	}
	_, err := tenant.CoreV1().ConfigMaps(musterNamespace).Create(ctx, record(musterNamespace, "muster-recreate-tenant", evilPod(b, "evil-1", "")), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant writing a record in %s: expected Forbidden, found %v", musterNamespace, err)
	}
	unsigned := record(musterNamespace, "muster-recreate-"+b+".evil-2", evilPod(b, "evil-2", ""))
	unsigned.Name += "-" + a // unique per run: muster-system outlives the test
	created, err := env.Kube.CoreV1().ConfigMaps(musterNamespace).Create(ctx, unsigned, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().ConfigMaps(musterNamespace).Delete(ctx, created.Name, metav1.DeleteOptions{})
	})

	startMuster(t, env, musterOptions{})
	note := untrustedEvent(t, env, musterNamespace, created.Name)
	t.Logf("muster on the unsigned record: %s", note)
	waitScheduling(t, env, a)
	if pods := listPods(t, env, b); len(pods) != 0 {
		t.Errorf("expected no pod in namespace %s, found %d: %s on %q", b, len(pods), pods[0].Name, pods[0].Spec.NodeName)
	}
	if _, err := env.Kube.CoreV1().ConfigMaps(b).Get(ctx, victim, metav1.GetOptions{}); err != nil {
		t.Errorf("expected ConfigMap %s/%s left alone, found %v", b, victim, err)
	}
	if _, err := env.Kube.CoreV1().ConfigMaps(musterNamespace).Get(ctx, created.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("expected the unsigned record kept for its owner to see, found %v", err)
	}
}

// TestForgedPlanIsIgnored: a tenant of namespace A creates pods of muster's already
// bound, carrying plans for groups of namespace B: one that would bind B's gathering
// members and another scheduler's pod to a chosen node (its nodes fit), one that would
// evict B's running pod (its other node does not exist). Each is ignored, with an UntrustedRecord
// Event on its carrier, and B is untouched. Before, the first bound B's pods and the
// second evicted B's running pod ("undoing a plan in flight").
func TestForgedPlanIsIgnored(t *testing.T) {
	env := sandboxtest.Shared(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "tenant-plan", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 1})
	a, b := env.Namespace(t), env.Namespace(t)
	tenant := tenantClient(t, env, a, "tenant-a")
	ctx := context.Background()

	// B: a running pod of muster's, a plain group gathering (2 of 3), another
	// scheduler's pod.
	first := startMuster(t, env, musterOptions{})
	running := env.CreatePod(t, sandboxtest.Pod(b, "running").SchedulerName("muster").Obj())
	running = env.WaitForPod(t, running, "Running", sandboxtest.PodPhase(corev1.PodRunning))
	var gathering []*corev1.Pod
	for i := range 2 {
		p := sandboxtest.Pod(b, fmt.Sprintf("gathering-%d", i)).SchedulerName("muster").
			Annotate(musterv1alpha1.MinMemberAnnotation, "3").Obj()
		p.Labels = map[string]string{musterv1alpha1.GroupLabel: "gathering"}
		gathering = append(gathering, env.CreatePod(t, p))
	}
	other := env.CreatePod(t, sandboxtest.Pod(b, "other").SchedulerName("other-scheduler").Obj())
	first.stop(t)

	carrier := func(name string, plan controller.Plan) *corev1.Pod {
		p := sandboxtest.Pod(a, name).SchedulerName("muster").Obj()
		p.Spec.NodeName = nodes[0]
		data, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		p.Annotations = map[string]string{musterv1alpha1.PlacementAnnotation: string(data)}
		got, err := tenant.CoreV1().Pods(a).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("the tenant creating pod %s: %v", name, err)
		}
		return got
	}
	bind := controller.Plan{Group: "Labels/" + b + "/gathering", Attempt: 1, Signature: "Zm9yZ2Vk", Pods: map[string]controller.Assignment{
		"carrier-bind": {Node: nodes[0]},
		"gathering-0":  {Node: nodes[1], UID: gathering[0].UID},
		"other":        {Node: nodes[2], UID: other.UID},
	}}
	evict := controller.Plan{Group: "Single/" + b + "/running", Attempt: 1, Pods: map[string]controller.Assignment{
		"carrier-evict": {Node: nodes[0]},
		"running":       {Node: running.Spec.NodeName, UID: running.UID},
		"gathering-1":   {Node: "no-such-node", UID: gathering[1].UID},
	}}
	c1 := carrier("carrier-bind", bind)
	c2 := carrier("carrier-evict", evict)
	startMuster(t, env, musterOptions{})
	for _, c := range []*corev1.Pod{c1, c2} {
		t.Logf("muster on %s: %s", c.Name, untrustedEvent(t, env, a, c.Name))
	}
	waitScheduling(t, env, a)
	for _, p := range append(gathering, other) {
		if got := getPod(t, env, b, p.Name); got.Spec.NodeName != "" {
			t.Errorf("expected %s/%s unbound, found it bound to %s", b, p.Name, got.Spec.NodeName)
		}
	}
	got := getPod(t, env, b, "running")
	if got.UID != running.UID || got.DeletionTimestamp != nil {
		t.Errorf("expected %s/running (uid %s) left running, found uid %s, deletion %v", b, running.UID, got.UID, got.DeletionTimestamp)
	}
}
