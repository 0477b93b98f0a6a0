package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/sandbox"
)

// Scenario names.
const (
	// ScenarioSeed is the two-jobs example: 8 one-GPU nodes, two jobs of 8 one-GPU
	// pods created interleaved, observed for a fixed window.
	ScenarioSeed = "seed"
	// ScenarioThroughput is 1,000 nodes × 8 GPUs and 500 gangs of 8 one-GPU pods.
	ScenarioThroughput = "throughput"
	// ScenarioBigGang is 5,000 one-GPU nodes and one gang of 1,000 one-GPU pods.
	ScenarioBigGang = "big-gang"
	// ScenarioAntiAffinity is the throughput workload with one-per-node anti-affinity:
	// each gang's 8 pods require distinct nodes (kubernetes.io/hostname), as MPI and NCCL
	// jobs ask.
	ScenarioAntiAffinity = "anti-affinity"
	// ScenarioCeiling is not a workload of its own: it adds the ceiling runner to the
	// throughput and big-gang scenarios.
	ScenarioCeiling = "ceiling"
)

// Scenarios lists the names Options.Scenarios accepts, in the order they run.
func Scenarios() []string {
	return []string{ScenarioSeed, ScenarioThroughput, ScenarioBigGang, ScenarioAntiAffinity, ScenarioDRA, ScenarioDeepQueue, ScenarioCeiling, ScenarioSoak}
}

// DefaultScenarios are the scenarios run when none is named: all but the soak.
func DefaultScenarios() []string {
	return []string{ScenarioSeed, ScenarioThroughput, ScenarioBigGang, ScenarioCeiling}
}

// LabelJob labels every bench pod with the job (gang) it belongs to, for every
// runner: the measurements group pods by it, whether or not the scheduler sees a gang.
const LabelJob = "bench.muster.dev/job"

// Scenario is one workload on one cluster.
type Scenario struct {
	// Name is one of the Scenario* constants.
	Name string
	// Cluster is the simulated cluster, created once and shared by every runner.
	Cluster sandbox.Cluster
	// Jobs is the number of gangs; each has JobSize pods of one GPU, all of which must
	// be bound for it to be whole (minMember = JobSize).
	Jobs, JobSize int
	// Interleave creates the pods one at a time, job-0 pod 0, job-1 pod 0, job-0
	// pod 1, …, so that a pod-by-pod scheduler splits the GPUs between the jobs.
	// Otherwise pods are created job by job by parallel workers.
	Interleave bool
	// Window, if set, is how long the run is observed from the first create; the run
	// does not wait for every pod to be bound (some never are). Otherwise the run ends
	// when every pod is bound.
	Window time.Duration
	// OnePerNode gives each pod required anti-affinity to its job's other pods by
	// hostname.
	OnePerNode bool
	// DRA gives each pod its GPU as a DRA claim from a template instead of the extended
	// resource (ScenarioDRA).
	DRA bool
	// Deep, if set, makes this the deep-queue scenario of these sizes: its workload
	// is Deep's groups and gangs, not Jobs × JobSize (JobSize is its gangs' size).
	Deep *DeepQueue
}

// scenarioByName returns the scenario of a workload name.
func scenarioByName(name string) (Scenario, error) {
	pool := func(count, gpus int) sandbox.Cluster {
		return sandbox.Cluster{Pools: []sandbox.NodePool{{
			Name: "gpu", Count: count, CPU: "64", Memory: "512Gi", GPUs: gpus, GPUProduct: "NVIDIA-A100-SXM4-80GB",
		}}}
	}
	switch name {
	case ScenarioSeed:
		return Scenario{Name: name, Cluster: pool(8, 1), Jobs: 2, JobSize: 8, Interleave: true, Window: 60 * time.Second}, nil
	case ScenarioThroughput:
		return Scenario{Name: name, Cluster: pool(1000, 8), Jobs: 500, JobSize: 8}, nil
	case ScenarioBigGang:
		return Scenario{Name: name, Cluster: pool(5000, 1), Jobs: 1, JobSize: 1000}, nil
	case ScenarioAntiAffinity:
		return Scenario{Name: name, Cluster: pool(1000, 8), Jobs: 500, JobSize: 8, OnePerNode: true}, nil
	case ScenarioDRA:
		return draScenario(DefaultDRANodes, DefaultDRAGangs)
	case ScenarioDeepQueue:
		return deepScenario(DeepQueue{Nodes: DefaultDeepNodes, Groups: DefaultDeepGroups, Gangs: DefaultDeepGangs}), nil
	}
	return Scenario{}, fmt.Errorf("scenario: expected one of %s, found %q", strings.Join(Scenarios(), ", "), name)
}

// Pods is the number of pods of the workload.
func (s Scenario) Pods() int {
	if s.Deep != nil {
		return s.Deep.pods()
	}
	return s.Jobs * s.JobSize
}

// jobName names the j-th job.
func jobName(j int) string { return "job-" + strconv.Itoa(j) }

// workload is the objects one runner is given: the gangs' PodGroups (none for
// runners that schedule plain pods) and the pods in creation order.
type workload struct {
	groups []*schedulingv1beta1.PodGroup
	pods   []*corev1.Pod
}

// podSpec says how a runner wants its pods: which scheduler, and whether they name a
// native PodGroup.
type podSpec struct {
	schedulerName string
	gang          bool
}

// build returns the scenario's objects in namespace ns, shaped as spec says. Every
// runner gets the same pods, names, requests and order; only schedulerName and
// spec.schedulingGroup differ.
func (s Scenario) build(ns string, spec podSpec) workload {
	if s.Deep != nil {
		return s.buildDeep(ns, spec)
	}
	var w workload
	if spec.gang {
		for j := range s.Jobs {
			w.groups = append(w.groups, &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobName(j)},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(s.JobSize)},
				}},
			})
		}
	}
	add := func(j, i int) { w.pods = append(w.pods, s.pod(ns, j, i, spec)) }
	if s.Interleave {
		for i := range s.JobSize {
			for j := range s.Jobs {
				add(j, i)
			}
		}
		return w
	}
	for j := range s.Jobs {
		for i := range s.JobSize {
			add(j, i)
		}
	}
	return w
}

// pod is the i-th worker of job j: one GPU, one CPU, 1 GiB.
func (s Scenario) pod(ns string, j, i int, spec podSpec) *corev1.Pod {
	return s.podOf(ns, jobName(j), i, spec)
}

// podOf is the i-th worker of the named job: one GPU, one CPU, 1 GiB.
func (s Scenario) podOf(ns, job string, i int, spec podSpec) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: job + "-" + strconv.Itoa(i), Labels: map[string]string{LabelJob: job},
		},
		Spec: corev1.PodSpec{
			SchedulerName: spec.schedulerName,
			Containers: []corev1.Container{{
				Name: "worker", Image: "busybox:1.37",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
						sandbox.ResourceGPU: resource.MustParse("1"),
					},
					Limits: corev1.ResourceList{sandbox.ResourceGPU: resource.MustParse("1")},
				},
			}},
		},
	}
	if spec.gang {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &job}
	}
	if s.DRA {
		useClaim(p)
	}
	if s.OnePerNode {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelJob: job}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	}
	return p
}
