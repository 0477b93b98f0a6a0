package source

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// owner loads testdata/owners/NAME.yaml.
func owner(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "owners", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.ToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return u
}

func TestOwnerRoles(t *testing.T) {
	tests := []struct {
		fixture  string
		roles    []Role
		replicas int
		describe string
	}{{
		fixture:  "job",
		roles:    []Role{{Name: "parallelism", Replicas: 4}},
		replicas: 4,
		describe: "Job sweep declares 4 replicas (parallelism 4)",
	}, {
		fixture:  "job-default",
		roles:    []Role{{Name: "parallelism", Replicas: 1}},
		replicas: 1,
		describe: "Job once declares 1 replica (parallelism 1)",
	}, {
		fixture:  "pytorchjob",
		roles:    []Role{{Name: "Master", Replicas: 1}, {Name: "Worker", Replicas: 8}},
		replicas: 9,
		describe: "PyTorchJob train declares 9 replicas (Master 1, Worker 8)",
	}, {
		fixture:  "pytorchjob-defaults",
		roles:    []Role{{Name: "Master", Replicas: 1}, {Name: "Worker", Replicas: 2}},
		replicas: 3,
		describe: "PyTorchJob small declares 3 replicas (Master 1, Worker 2)",
	}, {
		fixture:  "tfjob",
		roles:    []Role{{Name: "Chief", Replicas: 1}, {Name: "PS", Replicas: 2}, {Name: "Worker", Replicas: 4}},
		replicas: 7,
		describe: "TFJob mnist declares 7 replicas (Chief 1, PS 2, Worker 4)",
	}, {
		fixture:  "mpijob-v1",
		roles:    []Role{{Name: "Launcher", Replicas: 1}, {Name: "Worker", Replicas: 8}},
		replicas: 9,
		describe: "MPIJob pi declares 9 replicas (Launcher 1, Worker 8)",
	}, {
		fixture:  "mpijob-v2beta1",
		roles:    []Role{{Name: "Launcher", Replicas: 1}, {Name: "Worker", Replicas: 4}},
		replicas: 5,
		describe: "MPIJob allreduce declares 5 replicas (Launcher 1, Worker 4)",
	}, {
		fixture:  "mpijob-v2beta1-no-workers",
		roles:    []Role{{Name: "Launcher", Replicas: 1}, {Name: "Worker", Replicas: 0}},
		replicas: 1,
		describe: "MPIJob launcher-only declares 1 replica (Launcher 1, Worker 0)",
	}, {
		fixture:  "jobset",
		roles:    []Role{{Name: "driver", Replicas: 1, Jobs: 1}, {Name: "workers", Replicas: 8, Jobs: 2}},
		replicas: 9,
		describe: "JobSet llm declares 9 replicas (driver 1, workers 8 (2 jobs × 4 pods))",
	}, {
		fixture:  "raycluster",
		roles:    []Role{{Name: "head", Replicas: 1}, {Name: "gpu", Replicas: 4}, {Name: "capped", Replicas: 2}, {Name: "tpu", Replicas: 6}, {Name: "idle", Replicas: 0}},
		replicas: 13,
		describe: "RayCluster llm-batch declares 13 replicas (head 1, gpu 4, capped 2, tpu 6, idle 0)",
	}, {
		fixture:  "raycluster-head-only",
		roles:    []Role{{Name: "head", Replicas: 1}},
		replicas: 1,
		describe: "RayCluster solo declares 1 replica (head 1)",
	}}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			o := owner(t, tt.fixture)
			roles, err := OwnerRoles(o)
			if err != nil {
				t.Fatalf("OwnerRoles: %v", err)
			}
			if diff := cmp.Diff(tt.roles, roles); diff != "" {
				t.Errorf("OwnerRoles (-want +got):\n%s", diff)
			}
			if n, err := OwnerReplicas(o); err != nil || n != tt.replicas {
				t.Errorf("OwnerReplicas = %d, %v; want %d, nil", n, err, tt.replicas)
			}
			if s, err := DescribeOwner(o); err != nil || s != tt.describe {
				t.Errorf("DescribeOwner = %q, %v; want %q, nil", s, err, tt.describe)
			}
		})
	}
}

func TestOwnerRolesOtherKubeflowKinds(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "XGBoostJob", "metadata": map[string]any{"name": "boost"},
		"spec": map[string]any{"xgbReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)},
			"Worker": map[string]any{"replicas": float64(3)},
		}},
	}}
	if n, err := OwnerReplicas(o); err != nil || n != 4 {
		t.Errorf("OwnerReplicas = %d, %v; want 4, nil", n, err)
	}
}

func TestOwnerRolesErrors(t *testing.T) {
	tests := []struct {
		fixture string
		err     string
		unknown bool
	}{{
		fixture: "deployment",
		err: "Deployment web: unknown owner kind Deployment of apps/v1: expected a batch/v1 Job, " +
			"a kubeflow.org training job, a jobset.x-k8s.io/v1alpha2 JobSet or a ray.io/v1 RayCluster",
		unknown: true,
	}, {
		fixture: "pytorchjob-malformed",
		err:     `PyTorchJob broken: spec.pytorchReplicaSpecs.Worker.replicas: "eight": expected a whole number, found string`,
	}, {
		fixture: "jobset-malformed",
		err:     "JobSet broken: spec.replicatedJobs[0].replicas: -2: expected a whole number of 0 or more",
	}, {
		fixture: "raycluster-malformed",
		err:     `RayCluster broken: spec.workerGroupSpecs[0].replicas: "four": expected a whole number, found string`,
	}}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			_, err := OwnerReplicas(owner(t, tt.fixture))
			if err == nil {
				t.Fatalf("OwnerReplicas: no error, want %q", tt.err)
			}
			if err.Error() != tt.err {
				t.Errorf("OwnerReplicas error:\n got %q\nwant %q", err, tt.err)
			}
			if got := errors.Is(err, ErrUnknownOwnerKind); got != tt.unknown {
				t.Errorf("errors.Is(err, ErrUnknownOwnerKind) = %v, want %v", got, tt.unknown)
			}
		})
	}
}

func TestOwnerRolesMissingSpecs(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": map[string]any{"name": "empty"},
	}}
	_, err := OwnerReplicas(o)
	want := "TFJob empty: spec.tfReplicaSpecs: not set: expected a map of replica types"
	if err == nil || err.Error() != want {
		t.Errorf("OwnerReplicas error = %v, want %q", err, want)
	}
}

func TestOwnerFailure(t *testing.T) {
	job := func(kind string, conditions ...map[string]any) *unstructured.Unstructured {
		apiVersion := map[string]string{"Job": "batch/v1", "PyTorchJob": "kubeflow.org/v1", "Deployment": "apps/v1"}[kind]
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"namespace": "default", "name": "train"}}}
		if conditions != nil {
			list := make([]any, len(conditions))
			for i, c := range conditions {
				list[i] = c
			}
			u.Object["status"] = map[string]any{"conditions": list}
		}
		return u
	}
	for _, tc := range []struct {
		name  string
		owner *unstructured.Unstructured
		want  string
	}{
		{"no owner", nil, ""},
		{"no status", job("Job"), ""},
		{"running", job("Job", map[string]any{"type": "Suspended", "status": "False"}), ""},
		{"failure not yet final", job("Job", map[string]any{"type": "Failed", "status": "False"}), ""},
		{"failed", job("Job",
			map[string]any{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
			map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}),
			"Job default/train failed: BackoffLimitExceeded: Job has reached the specified backoff limit"},
		{"failed without a reason", job("PyTorchJob", map[string]any{"type": "Failed", "status": "True"}), "PyTorchJob default/train failed"},
		{"a kind muster does not read", job("Deployment", map[string]any{"type": "Failed", "status": "True"}), ""},
		{"malformed conditions", &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": "yes"}}}, ""},
	} {
		if got := OwnerFailure(tc.owner); got != tc.want {
			t.Errorf("%s: OwnerFailure = %q, want %q", tc.name, got, tc.want)
		}
	}
}
