package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestExpectedStartOnItsGPUPool: two 2-GPU nodes of two GPU products. A job of two
// one-GPU pods that select the first product, and declare an hour, runs on its node; a
// job of one pod that selects the same product waits, although the other product's node
// is idle, and muster serve, as deployed, writes in its record that it is expected to
// start in an hour, when the first job ends, not at once on the node it may not use.
func TestExpectedStartOnItsGPUPool(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	busy, idle := ns+"-busy", ns+"-idle"
	env.CreateNodes(t, sandbox.NodePool{Name: "forecast-a", Count: 1, CPU: "16", Memory: "64Gi", GPUs: 2, GPUProduct: busy})
	env.CreateNodes(t, sandbox.NodePool{Name: "forecast-b", Count: 1, CPU: "16", Memory: "64Gi", GPUs: 2, GPUProduct: idle})
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	onBusy := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": busy} }

	expectStartWhenRunningEnds(t, env, m, c, ns, onBusy)
}

// TestExpectedStartOfDeviceClaims: one node of two DRA GPUs. A job of two pods that
// each claim a GPU, and declare an hour, runs on it; a job of one pod that claims one
// more waits, and muster serve, as deployed, writes in its record that it is expected to
// start in an hour, when the first job's claims are released, not at once because the
// node's GPUs are not extended resources.
func TestExpectedStartOfDeviceClaims(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "forecast-dra", Count: 1, CPU: "16", Memory: "64Gi", DRAGPUs: 2})
	createTemplate(t, env, ns)
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	onPool := func(p *corev1.Pod) {
		draWorker(p)
		p.Spec.NodeSelector = map[string]string{sandbox.LabelPool: "forecast-dra"}
	}

	expectStartWhenRunningEnds(t, env, m, c, ns, onPool)
}

// TestExpectedStartOfFirstAvailable: two nodes of two DRA GPUs each. Jobs hold two GPUs
// for an hour and one for three. A job of two pods whose claims prefer two GPUs each and
// take one otherwise (firstAvailable) waits, one GPU being free, and muster serve, as
// deployed, writes in its record that it is expected to start in an hour, with one GPU a
// pod, not in three, when its first alternative fits.
func TestExpectedStartOfFirstAvailable(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	pool := "forecast-prefer"
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 2, CPU: "16", Memory: "64Gi", DRAGPUs: 2})
	createTemplate(t, env, ns)
	spec := sandboxtest.GPUClaimSpec(1)
	class := spec.Devices.Requests[0].Exactly.DeviceClassName
	spec.Devices.Requests[0] = resourcev1.DeviceRequest{Name: spec.Devices.Requests[0].Name, FirstAvailable: []resourcev1.DeviceSubRequest{
		{Name: "two", DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2},
		{Name: "one", DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
	}}
	const prefer = "two-gpus-or-one"
	createClaimTemplate(t, env, ns, prefer, spec)
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	onPool := func(p *corev1.Pod) {
		draWorker(p)
		p.Spec.NodeSelector = map[string]string{sandbox.LabelPool: pool}
	}
	created := time.Now()
	runReady(t, env, c,
		pytorchJob{ns: ns, name: "hour", workers: 1, mutate: onPool, annotations: map[string]string{engine.AnnotationExpectedRuntime: "1h"}},
		pytorchJob{ns: ns, name: "three", mutate: onPool, annotations: map[string]string{engine.AnnotationExpectedRuntime: "3h"}})
	queued := pytorchJob{ns: ns, name: "queued", workers: 1,
		annotations: map[string]string{engine.AnnotationExpectedRuntime: "30m"},
		mutate: func(p *corev1.Pod) {
			onPool(p)
			useTemplate(p, prefer)
		}}
	queued.create(t, env, c)

	expectQueuedToStartAt(t, env, m, c, ns, "queued", created.Add(time.Hour))
}

// TestExpectedStartOfSelectedDevices: two nodes of two DRA GPUs each, in two NVLink
// cliques, and no node selector: the jobs' claims select the first clique's GPUs with a
// selector of their own. A job of two pods that declares an hour runs on the first
// clique's node; muster serve, as deployed, writes in the queued job's record that it
// is expected to start in an hour, when those GPUs come back, not at once on the other
// clique's idle GPUs, which its claim does not select.
func TestExpectedStartOfSelectedDevices(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	busy, idle := ns+"-busy", ns+"-idle"
	for _, clique := range []string{busy, idle} {
		env.CreateNodes(t, sandbox.NodePool{Name: clique, Count: 1, CPU: "16", Memory: "64Gi", DRAGPUs: 2, Clique: clique})
	}
	const inBusy = "one-gpu-in-busy-clique"
	createSelectorTemplate(t, env, ns, inBusy, fmt.Sprintf("device.attributes[%q].%s == %q", sandbox.DRADriver, sandbox.AttributeCliqueID, busy))
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	inBusyClique := func(p *corev1.Pod) {
		draWorker(p)
		useTemplate(p, inBusy)
	}

	expectStartWhenRunningEnds(t, env, m, c, ns, inBusyClique)
}

// TestExpectedStartOfZonalData: two 2-GPU nodes in two zones, and a disk of the first
// zone that the jobs' pods mount (a claim bound to a volume whose node affinity names
// the zone). A job of two pods that declares an hour runs on the first zone's node;
// muster serve, as deployed, writes in the queued job's record that it is expected to
// start in an hour, when that node's GPUs come back, not at once in the other zone,
// where its disk may not be used.
func TestExpectedStartOfZonalData(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	pool := "zonal-data"
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 2, CPU: "16", Memory: "64Gi", GPUs: 2, Zones: 2})
	zone := pool + "-zone-0"
	pv := createVolume(t, env, ns+"-data", "", corev1.LabelTopologyZone, zone,
		&corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "data"})
	claim := sandboxtest.Claim(ns, "data", "", "10Gi").Obj()
	claim.Spec.VolumeName = pv.Name
	env.CreateClaim(t, claim)
	env.WaitForClaim(t, ns, "data", "bound", sandboxtest.ClaimBound)
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	mountData := withVolumes(ns, func(b *sandboxtest.PodBuilder) *sandboxtest.PodBuilder { return b.Volume("data", "data") })

	expectStartWhenRunningEnds(t, env, m, c, ns, mountData)
}

// TestExpectedStartOfZonalClass: as TestExpectedStartOfZonalData, but each pod's scratch
// disk is a generic ephemeral volume of a WaitForFirstConsumer class that provisions
// only in zone 0 (allowedTopologies): its claim is not bound when the forecast reads it.
// The queued job is expected to start when zone 0's GPUs come back, not at once in zone 1.
func TestExpectedStartOfZonalClass(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	pool := "zonal-class"
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 2, CPU: "16", Memory: "64Gi", GPUs: 2, Zones: 2})
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := createClass(t, env, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-zone-0"},
		Provisioner: sandbox.StorageDriver, VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{pool + "-zone-0"}}}}}})
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	scratch := withVolumes(ns, func(b *sandboxtest.PodBuilder) *sandboxtest.PodBuilder {
		return b.EphemeralVolume("scratch", class.Name, "1Gi")
	})

	expectStartWhenRunningEnds(t, env, m, c, ns, scratch)
}

// TestExpectedStartInOneRack: racks 0 (nodes 0, 1) and 1 (nodes 2, 3) of 2-GPU nodes.
// Jobs hold all of node 1's GPUs for an hour and node 3's for three. A job of two
// 2-GPU pods whose PodGroup requires one rack (muster.dev/topology) waits, though nodes
// 0 and 2 are free, and muster serve, as deployed, writes in its record that it is
// expected to start in an hour, when rack 0 is free, not at once across the racks.
func TestExpectedStartInOneRack(t *testing.T) {
	expectStartInOneRack(t, "rack-forecast", func(ns string) pytorchJob {
		return pytorchJob{ns: ns, name: "queued", workers: 1,
			gpus:             map[string]int64{"queued-master-0": 2, "queued-worker-0": 2},
			annotations:      map[string]string{engine.AnnotationExpectedRuntime: "30m"},
			groupAnnotations: map[string]string{musterv1alpha1.TopologyAnnotation: sandbox.LabelRack}}
	})
}

// TestExpectedStartOfSelfAffineGang: the same, with a queued job whose pods require each
// other in one rack by their pod affinity instead of muster.dev/topology.
func TestExpectedStartOfSelfAffineGang(t *testing.T) {
	expectStartInOneRack(t, "affine-forecast", func(ns string) pytorchJob {
		return pytorchJob{ns: ns, name: "queued", workers: 1,
			gpus:        map[string]int64{"queued-master-0": 2, "queued-worker-0": 2},
			annotations: map[string]string{engine.AnnotationExpectedRuntime: "30m"},
			mutate:      affineTo("queued", sandbox.LabelRack)}
	})
}

// TestExpectedStartOfSpreadGang: two 2-GPU nodes; a job holds all of the second node's
// GPUs for an hour. A job of a one-GPU master and worker whose topology spread over the
// hostname, selecting the job's pods, allows one of them per node waits, though the
// first node has room for both, and muster serve, as deployed, writes in its record
// that it is expected to start in an hour, when the second node frees up, not at once.
func TestExpectedStartOfSpreadGang(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	pool := "spread-forecast"
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 2, CPU: "16", Memory: "64Gi", GPUs: 2})
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	created := time.Now()
	runReady(t, env, c, pytorchJob{ns: ns, name: "running", gpus: map[string]int64{"running-master-0": 2},
		annotations: map[string]string{engine.AnnotationExpectedRuntime: "1h"},
		mutate:      func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: pool + "-1"} }})
	spread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{jobNameLabel: "queued"}},
		}}
	}
	pytorchJob{ns: ns, name: "queued", workers: 1, mutate: spread,
		annotations: map[string]string{engine.AnnotationExpectedRuntime: "30m"}}.create(t, env, c)

	expectQueuedToStartAt(t, env, m, c, ns, "queued", created.Add(time.Hour))
}

// expectStartInOneRack runs, on pool's two racks of two 2-GPU nodes, a job on all of the
// first rack's second node for an hour and one on all of the second rack's for three,
// queues the job queued makes, of two 2-GPU pods that must share a rack, and checks
// that it is expected to start in an hour, not at once across the racks.
func expectStartInOneRack(t *testing.T, pool string, queued func(ns string) pytorchJob) {
	t.Helper()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 4, CPU: "16", Memory: "64Gi", GPUs: 2, Racks: 2})
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	created := time.Now()
	twoGPUsOn := func(name, node, runtime string) pytorchJob {
		return pytorchJob{ns: ns, name: name, gpus: map[string]int64{name + "-master-0": 2},
			annotations: map[string]string{engine.AnnotationExpectedRuntime: runtime},
			mutate:      func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node} }}
	}
	runReady(t, env, c, twoGPUsOn("running", pool+"-1", "1h"), twoGPUsOn("occupy", pool+"-3", "3h"))
	queued(ns).create(t, env, c)

	expectQueuedToStartAt(t, env, m, c, ns, "queued", created.Add(time.Hour))
}

// TestExpectedStartBesideACachePod: two 2-GPU nodes in two zones and a dataset cache pod
// on the first; the jobs' pods require the cache's zone by their pod affinity. A job of
// two pods that declares an hour fills the first node; muster serve, as deployed, keeps
// the next job queued (not Impossible, though the empty cluster has no cache) and
// writes in its record that it is expected to start in an hour, not at once in the
// other zone.
func TestExpectedStartBesideACachePod(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	pool := "cache-zone"
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 2, CPU: "16", Memory: "64Gi", GPUs: 2, Zones: 2})
	cache := sandboxtest.Pod(ns, "cache").Obj()
	cache.Labels = map[string]string{"app": "dataset-cache"}
	cache.Spec.NodeName = pool + "-0"
	env.CreatePod(t, cache)
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	nearCache := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dataset-cache"}},
				TopologyKey:   corev1.LabelTopologyZone,
			}},
		}}
	}

	expectStartWhenRunningEnds(t, env, m, c, ns, nearCache)
}

// expectStartWhenRunningEnds runs a job of two pods made by mutate that declares an
// hour, then queues a job of one pod made the same way that cannot run beside it, and
// checks that muster serve writes in the queued job's record that it is expected to
// start an hour after the first started, and that it is still queued.
func expectStartWhenRunningEnds(t *testing.T, env *sandboxtest.Env, m *muster, c client.Client, ns string, mutate func(*corev1.Pod)) {
	t.Helper()
	created := time.Now()
	running := pytorchJob{ns: ns, name: "running", workers: 1, mutate: mutate,
		annotations: map[string]string{engine.AnnotationExpectedRuntime: "1h"}}
	running.create(t, env, c)
	waitCondition(t, env, c, ns, "running", "PodsReady", metav1.ConditionTrue)
	queued := pytorchJob{ns: ns, name: "queued", workers: 0, mutate: mutate,
		annotations: map[string]string{engine.AnnotationExpectedRuntime: "30m"}}
	queued.create(t, env, c)

	expectQueuedToStartAt(t, env, m, c, ns, "queued", created.Add(time.Hour))
}

// runReady creates each of jobs and waits for its PodsReady condition, one after another.
func runReady(t *testing.T, env *sandboxtest.Env, c client.Client, jobs ...pytorchJob) {
	t.Helper()
	for _, j := range jobs {
		j.create(t, env, c)
		waitCondition(t, env, c, j.ns, j.name, "PodsReady", metav1.ConditionTrue)
	}
}

// expectQueuedToStartAt waits for the record of job name to have an expected start, and
// checks that it is between earliest (less a second: the record's times are to the
// second) and an hour after now, the latest an hour-long job started before now can end,
// and that the job is still queued. Once the job's record shows it queued, muster's
// clock moves on by the forecast's period, so that the next forecast, which counts the
// job, is made at once rather than up to 10 seconds later.
func expectQueuedToStartAt(t *testing.T, env *sandboxtest.Env, m *muster, c client.Client, ns, name string, earliest time.Time) {
	t.Helper()
	record := groupRecord(c, ns, name)
	env.WaitFor(t, "the job queued, in its record", func(ctx context.Context) (bool, error) {
		rec, ok := record(ctx)
		return ok && rec.Phase == "Queued", nil
	})
	// The forecast after the clock's move may still find the start unknown (its pods'
	// ResourceClaims not created yet): the clock moves on by a period until the record
	// has one.
	var at time.Time
	for deadline := time.Now().Add(sandboxtest.WaitTimeout); at.IsZero(); {
		if time.Now().After(deadline) {
			rec, _ := record(context.Background())
			t.Fatalf("waiting for the queued job's expected start in its record: none after %s (phase %s)", sandboxtest.WaitTimeout, rec.Phase)
		}
		m.AdvanceClock(t, engine.DefaultForecastEvery)
		_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Second, true, func(ctx context.Context) (bool, error) {
			rec, ok := record(ctx)
			if ok && rec.ExpectedStart != nil {
				at = rec.ExpectedStart.Time
			}
			return !at.IsZero(), nil
		})
	}
	earliest, latest := earliest.Add(-time.Second), time.Now().Add(time.Hour+time.Second)
	if at.Before(earliest) || at.After(latest) {
		t.Errorf("expected start %s, want an hour after the running job started: between %s and %s",
			at.Format(time.RFC3339), earliest.Format(time.RFC3339), latest.Format(time.RFC3339))
	}
	if rec, _ := record(context.Background()); rec.Phase != "Queued" {
		t.Errorf("%s: phase %s, want Queued", name, rec.Phase)
	}
}

// TestExpectedStartOfExclusiveJobs: two 2-GPU nodes; every job's pods repel the pods of
// other jobs from their node by required pod anti-affinity, as a JobSet's exclusive
// placement does (job name label present and not their own). A job of one 1-GPU pod
// that declares an hour runs on the first node, and one of a 2-GPU pod that declares
// three hours on the second. The next job's 1-GPU pod may not use the first node's free
// GPU beside the first job's pod: muster serve, as deployed, keeps it queued and writes
// in its record that it is expected to start in an hour, when that pod ends, not at once.
func TestExpectedStartOfExclusiveJobs(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	pool := "exclusive-forecast"
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 2, CPU: "16", Memory: "64Gi", GPUs: 2})
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	exclusive := func(node string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			if node != "" {
				p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
			}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: jobNameLabel, Operator: metav1.LabelSelectorOpExists},
						{Key: jobNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{p.Labels[jobNameLabel]}},
					}},
					TopologyKey: corev1.LabelHostname,
				}},
			}}
		}
	}
	created := time.Now()
	runReady(t, env, c,
		pytorchJob{ns: ns, name: "running", mutate: exclusive(pool + "-0"),
			annotations: map[string]string{engine.AnnotationExpectedRuntime: "1h"}},
		pytorchJob{ns: ns, name: "occupy", gpus: map[string]int64{"occupy-master-0": 2}, mutate: exclusive(pool + "-1"),
			annotations: map[string]string{engine.AnnotationExpectedRuntime: "3h"}})
	pytorchJob{ns: ns, name: "queued", mutate: exclusive(""),
		annotations: map[string]string{engine.AnnotationExpectedRuntime: "30m"}}.create(t, env, c)

	expectQueuedToStartAt(t, env, m, c, ns, "queued", created.Add(time.Hour))
}
