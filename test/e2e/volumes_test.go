package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// createVolume creates a 10Gi volume of the sandbox's CSI driver in class, usable only
// on the nodes labelled key=value, pre-bound to claimRef when it is set, and deletes it
// when the test ends.
func createVolume(t *testing.T, env *sandboxtest.Env, name, class, key, value string, claimRef *corev1.ObjectReference) *corev1.PersistentVolume {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: sandbox.StorageDriver, VolumeHandle: name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}},
			}}}},
			ClaimRef: claimRef,
		},
	}
	if _, err := env.Kube.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	return pv
}

// createClass creates StorageClass class, deleted when the test ends, and returns it.
func createClass(t *testing.T, env *sandboxtest.Env, class *storagev1.StorageClass) *storagev1.StorageClass {
	t.Helper()
	if _, err := env.Kube.StorageV1().StorageClasses().Create(context.Background(), class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.StorageV1().StorageClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	return class
}

// withVolumes adds the volumes of a pod built by build to a job's pod.
func withVolumes(ns string, build func(*sandboxtest.PodBuilder) *sandboxtest.PodBuilder) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		tmpl := build(sandboxtest.Pod(ns, p.Name)).Obj()
		p.Spec.Volumes = append(p.Spec.Volumes, tmpl.Spec.Volumes...)
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, tmpl.Spec.Containers[0].VolumeMounts...)
	}
}

// waitRunning waits until every pod of job is Running.
func waitRunning(t *testing.T, env *sandboxtest.Env, ns, job string, count int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	env.WaitFor(t, job+" Running", func(ctx context.Context) (bool, error) {
		list, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobNameLabel + "=" + job})
		if err != nil || len(list.Items) != count {
			return false, err
		}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		pods = list.Items
		return true, nil
	})
	return pods
}

// noBindWarnings fails on muster's FailedBinding Events in ns (the ephemeral volume
// controller reports its own with the same reason).
func noBindWarnings(t *testing.T, env *sandboxtest.Env, ns string) {
	t.Helper()
	evs, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "FailedBinding" && e.ReportingController == "muster" {
			t.Errorf("event %s on %s: %s", e.Reason, e.InvolvedObject.Name, e.Message)
		}
	}
}

// TestWaitForFirstConsumerVolumesOnTheSandbox: a one-per-node gang whose pods each have a
// generic ephemeral volume of a WaitForFirstConsumer class, and a gang sharing one such
// claim: muster names each claim's node before it binds the pod using it, the sandbox's
// provisioner makes node-local volumes there, and every pod runs.
func TestWaitForFirstConsumerVolumesOnTheSandbox(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "vol", Count: 4, CPU: "32", Memory: "128Gi", GPUs: 8, Zones: 2})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})

	scratch := withVolumes(ns, func(b *sandboxtest.PodBuilder) *sandboxtest.PodBuilder {
		return b.EphemeralVolume("scratch", sandbox.StorageClassLocal, "1Gi")
	})
	own := pytorchJob{ns: ns, name: "own", workers: 3, mutate: func(p *corev1.Pod) { onePerNode("own")(p); scratch(p) }}
	own.create(t, env, c)
	for _, p := range waitRunning(t, env, ns, "own", 4) {
		claim := env.WaitForClaim(t, ns, p.Name+"-scratch", "bound", sandboxtest.ClaimBound)
		if at := claim.Annotations["volume.kubernetes.io/selected-node"]; at != p.Spec.NodeName {
			t.Errorf("claim %s names node %q, its pod runs on %s", claim.Name, at, p.Spec.NodeName)
		}
		pv, err := env.Kube.CoreV1().PersistentVolumes().Get(context.Background(), claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(pv.Spec.NodeAffinity.Required.NodeSelectorTerms); !strings.Contains(got, p.Spec.NodeName) {
			t.Errorf("volume %s of %s: node affinity %s, want %s", pv.Name, p.Name, got, p.Spec.NodeName)
		}
	}
	if got := nodesOfJob(t, env, ns, "own"); len(got) != 4 {
		t.Errorf("one-per-node gang with volumes on %v, want 4 nodes", got)
	}

	env.CreateClaim(t, sandboxtest.Claim(ns, "shared", sandbox.StorageClassLocal, "1Gi").Obj())
	shared := pytorchJob{ns: ns, name: "shared", workers: 3, mutate: withVolumes(ns, func(b *sandboxtest.PodBuilder) *sandboxtest.PodBuilder {
		return b.Volume("data", "shared")
	})}
	shared.create(t, env, c)
	pods := waitRunning(t, env, ns, "shared", 4)
	claim := env.WaitForClaim(t, ns, "shared", "bound", sandboxtest.ClaimBound)
	for _, p := range pods {
		if at := claim.Annotations["volume.kubernetes.io/selected-node"]; p.Spec.NodeName != at {
			t.Errorf("pod %s on %s, the shared node-local claim was provisioned on %s", p.Name, p.Spec.NodeName, at)
		}
	}
	noBindWarnings(t, env, ns)
}

// TestMissingClaimIsImpossibleUntilCreated: a gang whose pods mount a claim that does
// not exist is Impossible, naming the claim, holds nothing, and runs once the claim is
// created.
func TestMissingClaimIsImpossibleUntilCreated(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "miss", Count: 2, CPU: "32", Memory: "128Gi", GPUs: 8})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	job := pytorchJob{ns: ns, name: "late", workers: 1, mutate: withVolumes(ns, func(b *sandboxtest.PodBuilder) *sandboxtest.PodBuilder {
		return b.Volume("data", "dataset")
	})}
	job.create(t, env, c)
	cond := waitCondition(t, env, c, ns, "late", "Impossible", metav1.ConditionTrue)
	if want := `persistentvolumeclaim "dataset" not found`; !strings.Contains(cond.Message, want) {
		t.Fatalf("Impossible message %q, want it to contain %q", cond.Message, want)
	}
	if got := stateOf(t, env, ns, "late").holding; got != 0 {
		t.Fatalf("the Impossible gang holds %d pods", got)
	}
	env.CreateClaim(t, sandboxtest.Claim(ns, "dataset", sandbox.StorageClassStandard, "1Gi").Obj())
	waitRunning(t, env, ns, "late", 2)
	noBindWarnings(t, env, ns)
}

// TestCrashBetweenClaimAndBind kills muster after 2 of a 4-member gang's binds; the
// other members' claims may already name their nodes (muster names a claim's node
// before it binds the pod). The next muster completes the plan: each unbound member's
// claim names its planned node and every member runs there. When another pod took a
// planned node meanwhile, it undoes the plan instead: the bound members are evicted
// (PlanUndone). The member planned on the taken node has its node-local volume there
// already (the sandbox provisions at once), so the gang waits for that node, and runs
// once the other pod is gone, each claim naming its pod's node.
func TestCrashBetweenClaimAndBind(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "vcrash", Count: 5, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	for _, takeNode := range []bool{false, true} {
		t.Run(fmt.Sprintf("planned node taken %v", takeNode), func(t *testing.T) {
			ns := env.Namespace(t)
			proxy := env.StartProxy(t)
			var binds atomic.Int32
			proxy.SetHook(func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
				if _, _, _, ok := sandboxtest.BindingOf(r); ok && binds.Add(1) > 2 {
					proxy.Hold(w, r)
					return
				}
				forward.ServeHTTP(w, r)
			})
			first := startMuster(t, env, musterOptions{proxy: proxy})
			scratch := withVolumes(ns, func(b *sandboxtest.PodBuilder) *sandboxtest.PodBuilder {
				return b.EphemeralVolume("scratch", sandbox.StorageClassLocal, "1Gi")
			})
			job := pytorchJob{ns: ns, name: "gang", workers: 3, plain: true, mutate: func(p *corev1.Pod) { onePerNode("gang")(p); scratch(p) }}
			job.create(t, env, c)
			env.WaitFor(t, "2 members bound", func(context.Context) (bool, error) {
				return stateOf(t, env, ns, "gang").holding == 2, nil
			})
			first.kill(t)
			planned := map[string]string{}
			for _, p := range listPods(t, env, ns) {
				if p.Spec.NodeName != "" {
					for name, a := range planOn(t, p).Pods {
						planned[name] = a.Node
					}
					break
				}
			}
			before := boundUIDs(t, env, ns)
			if takeNode {
				takePlannedNode(t, env, c, ns)
			}
			startMuster(t, env, musterOptions{})
			if takeNode {
				env.WaitFor(t, "the plan undone: its bound members evicted", func(context.Context) (bool, error) {
					for uid := range boundUIDs(t, env, ns) {
						if before[uid] {
							return false, nil
						}
					}
					return true, nil
				})
				if err := env.Kube.CoreV1().Pods(ns).Delete(context.Background(), "intruder", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range waitRunning(t, env, ns, "gang", 4) {
				if want := planned[p.Name]; !takeNode && p.Spec.NodeName != want {
					t.Errorf("pod %s on %s, planned on %s", p.Name, p.Spec.NodeName, want)
				}
				claim := env.WaitForClaim(t, ns, p.Name+"-scratch", "bound", sandboxtest.ClaimBound)
				if at := claim.Annotations["volume.kubernetes.io/selected-node"]; at != p.Spec.NodeName {
					t.Errorf("claim %s names node %q, its pod runs on %s", claim.Name, at, p.Spec.NodeName)
				}
			}
			noBindWarnings(t, env, ns)
		})
	}
}

// TestStaticVolumeOfAWaitForFirstConsumerClaim: a claim of a WaitForFirstConsumer class
// without a provisioner, that an existing node-local volume matches, is bound to it by muster (the volume's
// claimRef, as kube-scheduler writes it) and its pod runs on the volume's node.
func TestStaticVolumeOfAWaitForFirstConsumerClaim(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "ssd", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 1})
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var target string
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, "ssd") && n.Name > target {
			target = n.Name
		}
	}
	// A class without a provisioner, as local static volumes have: the claim can only
	// bind to the existing volume.
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := createClass(t, env, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-static"},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc})
	pv := createVolume(t, env, ns+"-ssd", class.Name, corev1.LabelHostname, target, nil)
	env.CreateClaim(t, sandboxtest.Claim(ns, "ssd", class.Name, "5Gi").Obj())
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	job := pytorchJob{ns: ns, name: "ssd", workers: 0, mutate: withVolumes(ns, func(b *sandboxtest.PodBuilder) *sandboxtest.PodBuilder {
		return b.Volume("data", "ssd")
	})}
	job.create(t, env, c)
	pods := waitRunning(t, env, ns, "ssd", 1)
	if pods[0].Spec.NodeName != target {
		t.Errorf("pod on %s, the volume is on %s", pods[0].Spec.NodeName, target)
	}
	claim := env.WaitForClaim(t, ns, "ssd", "bound", sandboxtest.ClaimBound)
	if claim.Spec.VolumeName != pv.Name {
		t.Errorf("claim bound to %q, want the existing volume %s", claim.Spec.VolumeName, pv.Name)
	}
	noBindWarnings(t, env, ns)
}
