package sandboxtest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-sched/muster/internal/sandbox"
)

// Timeouts of the helpers.
const (
	// WaitTimeout bounds every Wait helper.
	WaitTimeout = 60 * time.Second
	// pollInterval is how often Wait helpers check (and step a fake clock).
	pollInterval = 20 * time.Millisecond
)

// nonName matches runs of characters not allowed in a DNS-1123 label.
var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for the test, named after it, and deletes its Jobs,
// its pods and itself when the test ends. (With no namespace controller, a deleted
// namespace stays Terminating; its name is never reused.)
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	name := base + "-" + rand.String(5)
	ctx := context.Background()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		background := metav1.DeletePropagationBackground
		err := e.Kube.BatchV1().Jobs(name).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		if err != nil {
			t.Errorf("deleting Jobs of namespace %s: %v", name, err)
		}
		err = e.Kube.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		if err != nil {
			t.Errorf("deleting pods of namespace %s: %v", name, err)
		}
		if err := e.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// CreateNodes creates the nodes of pool, waits for their CSINodes (and, with DRA GPUs,
// their ResourceSlices), and deletes them when the test ends. It returns their names.
func (e *Env) CreateNodes(t testing.TB, pool sandbox.NodePool) []string {
	t.Helper()
	c := sandbox.Cluster{Pools: []sandbox.NodePool{pool}}
	nodes, err := c.Nodes()
	if err != nil {
		t.Fatalf("node pool %s: %v", pool.Name, err)
	}
	ctx := context.Background()
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	t.Cleanup(func() {
		for _, name := range names {
			err := e.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", name, err)
			}
		}
	})
	if err := sandbox.CreateNodes(ctx, e.Kube, c); err != nil {
		t.Fatalf("creating node pool %s: %v", pool.Name, err)
	}
	e.waitForCSINodes(t, names)
	if pool.DRAGPUs > 0 {
		e.waitForResourceSlices(t, names)
	}
	return names
}

// waitForCSINodes waits (without stepping a fake clock) until the sandbox has made the
// CSINode of every node named, so that a test's nodes have their volume limits, as the
// sandbox's own nodes have when it starts.
func (e *Env) waitForCSINodes(t testing.TB, names []string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, err := e.Kube.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return false, nil
			} else if err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the CSINodes of nodes %v: %v", names, err)
	}
}

// PodBuilder builds a pod for a test; start one with Pod.
type PodBuilder struct{ pod *v1.Pod }

// Pod starts a pod named name in namespace ns with one container "main" that
// requests 100m CPU and 128Mi memory, and restartPolicy Never.
func Pod(ns, name string) *PodBuilder {
	return &PodBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "main", Image: "registry.example/trainer:v1",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
	}}
}

// GPUs makes the main container request and limit n nvidia.com/gpu.
func (b *PodBuilder) GPUs(n int64) *PodBuilder {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	c := &b.pod.Spec.Containers[0]
	c.Resources.Requests[sandbox.ResourceGPU] = q
	c.Resources.Limits = v1.ResourceList{sandbox.ResourceGPU: q}
	return b
}

// Annotate sets annotation key to value.
func (b *PodBuilder) Annotate(key, value string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[key] = value
	return b
}

// InitContainer adds an init container named name.
func (b *PodBuilder) InitContainer(name string) *PodBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, v1.Container{Name: name, Image: "registry.example/init:v1"})
	return b
}

// SchedulerName sets spec.schedulerName.
func (b *PodBuilder) SchedulerName(name string) *PodBuilder {
	b.pod.Spec.SchedulerName = name
	return b
}

// RestartPolicy sets spec.restartPolicy (Never unless set). With
// kubelet.AnnotationFailInit, OnFailure or Always make the pod crash-loop, never Ready;
// Never makes it Failed.
func (b *PodBuilder) RestartPolicy(p v1.RestartPolicy) *PodBuilder {
	b.pod.Spec.RestartPolicy = p
	return b
}

// PriorityClass sets spec.priorityClassName.
func (b *PodBuilder) PriorityClass(name string) *PodBuilder {
	b.pod.Spec.PriorityClassName = name
	return b
}

// Obj returns the built pod.
func (b *PodBuilder) Obj() *v1.Pod { return b.pod.DeepCopy() }

// CreatePod creates pod and returns it as created.
func (e *Env) CreatePod(t testing.TB, pod *v1.Pod) *v1.Pod {
	t.Helper()
	got, err := e.Kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return got
}

// Bind binds pod to node through the Binding subresource, as a scheduler does.
func (e *Env) Bind(t testing.TB, pod *v1.Pod, node string) {
	t.Helper()
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := e.Kube.CoreV1().Pods(pod.Namespace).Bind(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding pod %s/%s to %s: %v", pod.Namespace, pod.Name, node, err)
	}
}

// WaitFor polls cond until it returns true, stepping the fake clock (if any) on
// every poll, and fails the test after WaitTimeout naming what it waited for.
func (e *Env) WaitFor(t testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		done, err := cond(ctx)
		if !done && err == nil && e.Clock != nil {
			e.Clock.Step(e.step)
		}
		return done, err
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// WaitForPod waits until cond holds for the current version of pod and returns
// that version. On timeout the failure names what and shows the pod's last status.
func (e *Env) WaitForPod(t testing.TB, pod *v1.Pod, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := e.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got
		if cond(got) {
			return true, nil
		}
		if e.Clock != nil {
			e.Clock.Step(e.step)
		}
		return false, nil
	})
	if err != nil {
		status := "never read"
		if last != nil {
			status = fmt.Sprintf("phase %s reason %q message %q conditions %v", last.Status.Phase, last.Status.Reason, last.Status.Message, last.Status.Conditions)
		}
		t.Fatalf("waiting for pod %s/%s to be %s: %v; last seen: %s", pod.Namespace, pod.Name, what, err, status)
	}
	return last
}

// PodReady holds when the pod's Ready condition is True.
func PodReady(p *v1.Pod) bool { return PodCondition(p, v1.PodReady) == v1.ConditionTrue }

// PodPhase returns a predicate that holds when the pod is in phase.
func PodPhase(phase v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p.Status.Phase == phase }
}

// PodCondition returns the status of the pod's condition t, or "" if it has none.
func PodCondition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// FreeAddr returns a loopback address whose port was free a moment ago, below the
// kernel's ephemeral range (sandbox.FreeLoopbackAddr), for a server a test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := sandbox.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Volume adds a volume named name backed by the claim claimName, mounted at /name in
// the main container.
func (b *PodBuilder) Volume(name, claimName string) *PodBuilder {
	return b.addVolume(v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
	}})
}

// EphemeralVolume adds a generic ephemeral volume named name of size (a quantity such
// as "1Gi") of StorageClass class, ReadWriteOnce, mounted at /name in the main
// container. Its claim is <pod>-<name>.
func (b *PodBuilder) EphemeralVolume(name, class, size string) *PodBuilder {
	return b.addVolume(v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: Claim("", "", class, size).Obj().Spec},
	}}})
}

// addVolume adds vol to the pod and mounts it in the main container.
func (b *PodBuilder) addVolume(vol v1.Volume) *PodBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, vol)
	c := &b.pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: vol.Name, MountPath: "/" + vol.Name})
	return b
}

// ClaimBuilder builds a PersistentVolumeClaim for a test; start one with Claim.
type ClaimBuilder struct{ claim *v1.PersistentVolumeClaim }

// Claim starts a ReadWriteOnce claim named name in namespace ns for size (a quantity
// such as "1Gi") of StorageClass class; class "" asks for a volume of no class (a
// static one), not for the default class.
func Claim(ns, name, class, size string) *ClaimBuilder {
	return &ClaimBuilder{claim: &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}}
}

// Annotate sets annotation key to value.
func (b *ClaimBuilder) Annotate(key, value string) *ClaimBuilder {
	if b.claim.Annotations == nil {
		b.claim.Annotations = map[string]string{}
	}
	b.claim.Annotations[key] = value
	return b
}

// Obj returns the built claim.
func (b *ClaimBuilder) Obj() *v1.PersistentVolumeClaim { return b.claim.DeepCopy() }

// CreateClaim creates claim and returns it as created.
func (e *Env) CreateClaim(t testing.TB, claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	t.Helper()
	got, err := e.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(context.Background(), claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating claim %s/%s: %v", claim.Namespace, claim.Name, err)
	}
	return got
}

// WaitForClaim waits until cond holds for the current version of the claim named
// name in namespace ns and returns that version. On timeout the failure names what
// and shows the claim's last phase, volume and annotations.
func (e *Env) WaitForClaim(t testing.TB, ns, name, what string, cond func(*v1.PersistentVolumeClaim) bool) *v1.PersistentVolumeClaim {
	t.Helper()
	var last *v1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := e.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		if err == nil {
			last = got
			if cond(got) {
				return true, nil
			}
		}
		if e.Clock != nil {
			e.Clock.Step(e.step)
		}
		return false, nil
	})
	if err != nil {
		seen := "never read"
		if last != nil {
			seen = fmt.Sprintf("phase %s volume %q annotations %v", last.Status.Phase, last.Spec.VolumeName, last.Annotations)
		}
		t.Fatalf("waiting for claim %s/%s to be %s: %v; last seen: %s", ns, name, what, err, seen)
	}
	return last
}

// ClaimBound holds when the claim is Bound to a volume.
func ClaimBound(c *v1.PersistentVolumeClaim) bool {
	return c.Status.Phase == v1.ClaimBound && c.Spec.VolumeName != ""
}

// WaitForEvent waits until an event of reason about the object named name in
// namespace ns (of any kind) has a message containing substr, and returns it.
func (e *Env) WaitForEvent(t testing.TB, ns, name, reason, substr string) *v1.Event {
	t.Helper()
	var found *v1.Event
	e.WaitFor(t, fmt.Sprintf("event %s on %s/%s with a message containing %q", reason, ns, name, substr), func(ctx context.Context) (bool, error) {
		list, err := e.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i, ev := range list.Items {
			if ev.InvolvedObject.Name == name && ev.Reason == reason && strings.Contains(ev.Message, substr) {
				found = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return found
}
