package source

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrUnknownOwnerKind is returned (wrapped) for an owner whose kind declares replicas in a
// way this package does not know.
var ErrUnknownOwnerKind = errors.New("unknown owner kind")

// Role is one kind of replica an owner declares: a PyTorchJob's Master or Worker, a
// JobSet's replicated job, or a Job's parallelism.
type Role struct {
	// Name is the replica type, or the replicated job's name.
	Name string
	// Replicas is the number of pods of this role.
	Replicas int
	// Jobs, for a JobSet, is the number of Jobs of this role, each running
	// Replicas/Jobs pods; 0 otherwise.
	Jobs int
}

// OwnerKind is a kind of workload controller whose declared replicas muster reads, for
// the diagnosis of a group that gathers (see OwnerRoles) and to tell when it has failed
// for good (see OwnerFailure). OwnerKinds is the one list of them: the controller reads
// only owners of these kinds, explain accepts their Names, and deploy/rbac grants get on
// exactly these (a test checks it).
type OwnerKind struct {
	// GroupKind is the kind. Its version is resolved through discovery (a RESTMapper),
	// among Versions.
	GroupKind schema.GroupKind
	// Name is what `muster explain` accepts for the kind: "pytorchjob".
	Name string
	// Versions are the API versions whose spec OwnerRoles reads, preferred first.
	Versions []string

	// roles reads the replicas declared in obj, an object of the kind at version.
	roles func(obj map[string]any, version string) ([]Role, error)
	// failure says why obj has failed for good, or "" if it has not.
	failure func(obj *unstructured.Unstructured) string
}

// kubeflow is a training-operator kind whose spec.field maps replica types to
// {replicas}, at versions.
func kubeflow(kind, field string, versions ...string) OwnerKind {
	return OwnerKind{
		GroupKind: schema.GroupKind{Group: "kubeflow.org", Kind: kind},
		Name:      strings.ToLower(kind),
		Versions:  versions,
		failure:   failedCondition,
		roles: func(obj map[string]any, version string) ([]Role, error) {
			// mpi-operator's v2beta1 MPIJob defaults Worker replicas to 0.
			return kubeflowRoles(obj, field, kind == "MPIJob" && version == "v2beta1")
		},
	}
}

// ownerKinds are the owner kinds, in the order explain lists them.
var ownerKinds = []OwnerKind{
	kubeflow("PyTorchJob", "pytorchReplicaSpecs", "v1"),
	kubeflow("TFJob", "tfReplicaSpecs", "v1"),
	kubeflow("MPIJob", "mpiReplicaSpecs", "v2beta1", "v1"),
	kubeflow("XGBoostJob", "xgbReplicaSpecs", "v1"),
	kubeflow("PaddleJob", "paddleReplicaSpecs", "v1"),
	kubeflow("JAXJob", "jaxReplicaSpecs", "v1"),
	{GroupKind: schema.GroupKind{Group: "batch", Kind: "Job"}, Name: "job", Versions: []string{"v1"}, failure: failedCondition,
		roles: func(obj map[string]any, _ string) ([]Role, error) { return jobRoles(obj) }},
	{GroupKind: schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}, Name: "jobset", Versions: []string{"v1alpha2"}, failure: failedCondition,
		roles: func(obj map[string]any, _ string) ([]Role, error) { return jobSetRoles(obj) }},
	// A RayCluster is a long-lived cluster, not a run: no condition of it means it
	// will create no more pods.
	{GroupKind: schema.GroupKind{Group: "ray.io", Kind: "RayCluster"}, Name: "raycluster", Versions: []string{"v1"},
		failure: func(*unstructured.Unstructured) string { return "" },
		roles:   func(obj map[string]any, _ string) ([]Role, error) { return rayClusterRoles(obj) }},
}

// OwnerKinds returns the owner kinds muster reads.
func OwnerKinds() []OwnerKind { return append([]OwnerKind(nil), ownerKinds...) }

// OwnerKindOf returns the owner kind gk, or nil when muster does not read owners of
// that kind (a ReplicaSet, an unknown operator's kind).
func OwnerKindOf(gk schema.GroupKind) *OwnerKind {
	for i := range ownerKinds {
		if ownerKinds[i].GroupKind == gk {
			return &ownerKinds[i]
		}
	}
	return nil
}

// OwnerKindNamed returns the owner kind that `muster explain` calls name
// ("pytorchjob"), or nil.
func OwnerKindNamed(name string) *OwnerKind {
	for i := range ownerKinds {
		if ownerKinds[i].Name == name {
			return &ownerKinds[i]
		}
	}
	return nil
}

// OwnerKindNames returns the names `muster explain` accepts for owner kinds, in order.
func OwnerKindNames() []string {
	names := make([]string, len(ownerKinds))
	for i, k := range ownerKinds {
		names[i] = k.Name
	}
	return names
}

// OwnerRoles returns the replicas owner declares, per role, applying the defaults its
// controller applies: batch/v1 Job (spec.parallelism, default 1); the training-operator
// v1 kinds PyTorchJob, TFJob, MPIJob and the other Kubeflow jobs (spec.*ReplicaSpecs.*.replicas,
// default 1); mpi-operator's kubeflow.org/v2beta1 MPIJob (Launcher default 1, Worker
// default 0); JobSet jobset.x-k8s.io/v1alpha2 (spec.replicatedJobs[].replicas, default 1,
// times template.spec.parallelism, default 1); KubeRay's ray.io/v1 RayCluster (the head,
// then its worker groups: see rayClusterRoles). Kubeflow roles are in name order, JobSet
// and RayCluster roles in spec order. A kind or version not in OwnerKinds is an error
// wrapping ErrUnknownOwnerKind.
func OwnerRoles(owner *unstructured.Unstructured) ([]Role, error) {
	gvk := owner.GroupVersionKind()
	k := OwnerKindOf(gvk.GroupKind())
	if k == nil || !slices.Contains(k.Versions, gvk.Version) {
		return nil, fmt.Errorf("%s %s: %w %s of %s: expected a batch/v1 Job, a kubeflow.org training job, a jobset.x-k8s.io/v1alpha2 JobSet or a ray.io/v1 RayCluster",
			gvk.Kind, owner.GetName(), ErrUnknownOwnerKind, gvk.Kind, owner.GetAPIVersion())
	}
	roles, err := k.roles(owner.Object, gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, owner.GetName(), err)
	}
	return roles, nil
}

// OwnerReplicas returns the number of pods owner declares, over all its roles (see
// OwnerRoles for the kinds it understands).
func OwnerReplicas(owner *unstructured.Unstructured) (int, error) {
	roles, err := OwnerRoles(owner)
	if err != nil {
		return 0, err
	}
	return totalReplicas(roles), nil
}

// DescribeOwner renders what owner declares, for diagnoses:
// "PyTorchJob train declares 9 replicas (Master 1, Worker 8)".
func DescribeOwner(owner *unstructured.Unstructured) (string, error) {
	roles, err := OwnerRoles(owner)
	if err != nil {
		return "", err
	}
	n := totalReplicas(roles)
	noun := "replicas"
	if n == 1 {
		noun = "replica"
	}
	return fmt.Sprintf("%s %s declares %d %s (%s)", owner.GetKind(), owner.GetName(), n, noun, FormatRoles(roles)), nil
}

// FormatRoles renders a per-role replica breakdown: "Master 1, Worker 8", or for a JobSet
// "workers 8 (2 jobs × 4 pods), driver 1".
func FormatRoles(roles []Role) string {
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = fmt.Sprintf("%s %d", r.Name, r.Replicas)
		if r.Jobs > 1 {
			parts[i] += fmt.Sprintf(" (%d jobs × %d pods)", r.Jobs, r.Replicas/r.Jobs)
		}
	}
	return strings.Join(parts, ", ")
}

func totalReplicas(roles []Role) int {
	n := 0
	for _, r := range roles {
		n += r.Replicas
	}
	return n
}

func jobRoles(obj map[string]any) ([]Role, error) {
	p, err := count(obj, 1, "spec", "parallelism")
	if err != nil {
		return nil, err
	}
	return []Role{{Name: "parallelism", Replicas: p}}, nil
}

func kubeflowRoles(obj map[string]any, field string, mpiV2 bool) ([]Role, error) {
	raw, found, err := unstructured.NestedFieldNoCopy(obj, "spec", field)
	if err != nil || !found {
		return nil, fmt.Errorf("spec.%s: not set: expected a map of replica types", field)
	}
	specs, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("spec.%s: %T: expected a map of replica types", field, raw)
	}
	var roles []Role
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		def := 1
		if mpiV2 && name == "Worker" {
			def = 0 // mpi-operator v2beta1 defaults Worker replicas to 0.
		}
		n, err := count(obj, def, "spec", field, name, "replicas")
		if err != nil {
			return nil, err
		}
		roles = append(roles, Role{Name: name, Replicas: n})
	}
	return roles, nil
}

func jobSetRoles(obj map[string]any) ([]Role, error) {
	raw, found, err := unstructured.NestedFieldNoCopy(obj, "spec", "replicatedJobs")
	if err != nil || !found {
		return nil, errors.New("spec.replicatedJobs: not set: expected a list of replicated jobs")
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("spec.replicatedJobs: %T: expected a list of replicated jobs", raw)
	}
	roles := make([]Role, 0, len(list))
	for i, item := range list {
		rj, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.replicatedJobs[%d]: %T: expected an object", i, item)
		}
		name, _, _ := unstructured.NestedString(rj, "name")
		jobs, err := count(rj, 1, "replicas")
		if err == nil {
			var par int
			par, err = count(rj, 1, "template", "spec", "parallelism")
			if err == nil {
				roles = append(roles, Role{Name: name, Replicas: jobs * par, Jobs: jobs})
				continue
			}
		}
		return nil, fmt.Errorf("spec.replicatedJobs[%d].%w", i, err)
	}
	return roles, nil
}

// rayClusterRoles reads a RayCluster's pods as KubeRay creates them: one head, and for
// each worker group its replicas held within minReplicas and maxReplicas (maxReplicas
// when they cross; none when the group is suspended), times numOfHosts (default 1).
func rayClusterRoles(obj map[string]any) ([]Role, error) {
	if _, found, _ := unstructured.NestedFieldNoCopy(obj, "spec", "headGroupSpec"); !found {
		return nil, errors.New("spec.headGroupSpec: not set: expected the head's group")
	}
	roles := []Role{{Name: "head", Replicas: 1}}
	raw, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "workerGroupSpecs")
	if raw == nil {
		return roles, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("spec.workerGroupSpecs: %T: expected a list of worker groups", raw)
	}
	for i, item := range list {
		wg, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.workerGroupSpecs[%d]: %T: expected an object", i, item)
		}
		name, _, _ := unstructured.NestedString(wg, "groupName")
		n, err := workerGroupPods(wg)
		if err != nil {
			return nil, fmt.Errorf("spec.workerGroupSpecs[%d].%w", i, err)
		}
		roles = append(roles, Role{Name: name, Replicas: n})
	}
	return roles, nil
}

// workerGroupPods is how many pods KubeRay creates for worker group wg.
func workerGroupPods(wg map[string]any) (int, error) {
	if suspended, _, _ := unstructured.NestedBool(wg, "suspend"); suspended {
		return 0, nil
	}
	replicas, err := count(wg, 0, "replicas")
	if err != nil {
		return 0, err
	}
	lo, err := count(wg, 0, "minReplicas")
	if err != nil {
		return 0, err
	}
	hi, err := count(wg, math.MaxInt32, "maxReplicas")
	if err != nil {
		return 0, err
	}
	hosts, err := count(wg, 1, "numOfHosts")
	if err != nil {
		return 0, err
	}
	// Held within [lo, hi]; maxReplicas wins when the two cross.
	return min(max(replicas, lo), hi) * hosts, nil
}

// count reads a non-negative integer field, def when absent. Errors name the field path.
func count(obj map[string]any, def int, path ...string) (int, error) {
	field := strings.Join(path, ".")
	raw, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	if !found || raw == nil {
		return def, nil
	}
	var n int64
	switch v := raw.(type) {
	case int64:
		n = v
	case int32:
		n = int64(v)
	case int:
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
			return 0, fmt.Errorf("%s: %v: expected a whole number", field, v)
		}
		n = int64(v)
	default:
		return 0, fmt.Errorf("%s: %#v: expected a whole number, found %T", field, raw, raw)
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d: expected a whole number of 0 or more", field, n)
	}
	return int(n), nil
}

// OwnerFailure returns why owner has failed for good, or "" if it has not (or is nil, or
// of a kind not in OwnerKinds): a batch Job, JobSet or Kubeflow training job whose
// status.conditions has type Failed with status True creates no more pods. E.g. "Job
// default/train failed: BackoffLimitExceeded: Job has reached the specified backoff limit".
func OwnerFailure(owner *unstructured.Unstructured) string {
	if owner == nil {
		return ""
	}
	k := OwnerKindOf(owner.GroupVersionKind().GroupKind())
	if k == nil {
		return ""
	}
	return k.failure(owner)
}

// failedCondition reads a Failed condition with status True from owner's
// status.conditions, as batch Jobs, JobSets and the Kubeflow jobs write it.
func failedCondition(owner *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(owner.Object, "status", "conditions")
	for _, c := range conditions {
		cond, ok := c.(map[string]any)
		if !ok || cond["type"] != "Failed" || cond["status"] != "True" {
			continue
		}
		out := fmt.Sprintf("%s %s/%s failed", owner.GetKind(), owner.GetNamespace(), owner.GetName())
		for _, field := range []string{"reason", "message"} {
			if v, _ := cond[field].(string); v != "" {
				out += ": " + v
			}
		}
		return out
	}
	return ""
}
