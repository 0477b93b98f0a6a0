package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// testPod is a pod with one container and, if init, one init container.
func testPod(init bool, annotations map[string]string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Annotations: annotations},
		Spec:       v1.PodSpec{NodeName: "n", Containers: []v1.Container{{Name: "main", Image: "img"}}},
	}
	if init {
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "init"}, {Name: "second", Image: "init"}}
	}
	return p
}

// summary is what the timeline tests compare: phase, Ready, container states.
func summary(s v1.PodStatus) string {
	out := string(s.Phase)
	for _, c := range s.Conditions {
		if c.Type == v1.PodReady {
			out += " ready=" + string(c.Status)
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for _, c := range list {
			switch {
			case c.State.Waiting != nil:
				out += " " + c.Name + ":waiting/" + c.State.Waiting.Reason
			case c.State.Running != nil:
				out += " " + c.Name + ":running"
			case c.State.Terminated != nil:
				out += " " + c.Name + ":terminated/" + c.State.Terminated.Reason
			}
		}
	}
	return out
}

func TestRenderStatusTimeline(t *testing.T) {
	const pull = 2 * time.Second
	defaults := faults{readyAfter: 30 * time.Second, runFor: 10 * time.Minute}
	for _, tc := range []struct {
		name     string
		init     bool
		never    bool // restartPolicy Never
		f        faults
		at       time.Duration // since bound
		want     string
		wantNext time.Duration
	}{
		{"pulling", false, false, defaults, time.Second, "Pending ready=False main:waiting/ContainerCreating", time.Second},
		{"pulling with init", true, false, defaults, 0, "Pending ready=False setup:waiting/ContainerCreating second:waiting/ContainerCreating main:waiting/PodInitializing", pull},
		{"running not ready", false, false, defaults, pull, "Running ready=False main:running", 30 * time.Second},
		{"ready", true, false, defaults, pull + 30*time.Second, "Running ready=True setup:terminated/Completed second:terminated/Completed main:running", 9*time.Minute + 30*time.Second},
		{"succeeded", false, false, defaults, pull + 10*time.Minute, "Succeeded ready=False main:terminated/Completed", 0},
		{"failed", false, false, faults{runFor: time.Minute, exitCode: 2}, pull + time.Hour, "Failed ready=False main:terminated/Error", 0},
		{"runs forever", false, false, faults{readyAfter: time.Second}, pull + time.Hour, "Running ready=True main:running", 0},
		{"run ends before ready", false, false, faults{readyAfter: time.Hour, runFor: time.Minute}, pull, "Running ready=False main:running", time.Minute},
		{"fail init", true, false, faults{failInit: true}, pull + time.Hour, "Pending ready=False setup:waiting/CrashLoopBackOff second:waiting/PodInitializing main:waiting/PodInitializing", 0},
		{"fail init without init containers", false, false, faults{failInit: true}, pull, "Running ready=False main:waiting/CrashLoopBackOff", 0},
		{"fail init, restartPolicy Never", true, true, faults{failInit: true}, pull, "Failed ready=False setup:terminated/Error second:waiting/PodInitializing main:waiting/PodInitializing", 0},
		{"fail init without init containers, restartPolicy Never", false, true, faults{failInit: true}, pull, "Failed ready=False main:terminated/Error", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(tc.init, nil)
			if tc.never {
				pod.Spec.RestartPolicy = v1.RestartPolicyNever
			}
			got, next := renderStatus(pod, t0, t0.Add(tc.at), tc.f, pull)
			if s := summary(got); s != tc.want || next != tc.wantNext {
				t.Errorf("expected %q next in %s, found %q next in %s", tc.want, tc.wantNext, s, next)
			}
		})
	}
}

func TestRenderStatusIsStable(t *testing.T) {
	// Rendering again from the written status changes nothing, so the kubelet does
	// not rewrite a pod that is at rest.
	pod := testPod(true, nil)
	f := faults{readyAfter: 30 * time.Second}
	first, _ := renderStatus(pod, t0, t0.Add(time.Minute), f, time.Second)
	pod.Status = first
	second, _ := renderStatus(pod, t0, t0.Add(2*time.Minute), f, time.Second)
	if !equality.Semantic.DeepEqual(first, second) {
		t.Errorf("expected the same status on a second render, found\n%+v\nthen\n%+v", first, second)
	}
}

func TestParseFaults(t *testing.T) {
	timing := Timing{ReadyDelay: time.Second, RunFor: time.Hour}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        faults
		wantErr     string
	}{
		{"defaults", nil, faults{readyAfter: time.Second, runFor: time.Hour}, ""},
		{"all set", map[string]string{AnnotationFailInit: "true", AnnotationReadyAfter: "30s", AnnotationRunFor: "10m", AnnotationExitCode: "1"},
			faults{failInit: true, readyAfter: 30 * time.Second, runFor: 10 * time.Minute, exitCode: 1}, ""},
		{"bad bool", map[string]string{AnnotationFailInit: "yes please"}, faults{},
			`annotation sandbox.muster.dev/fail-init: expected true or false, found "yes please"`},
		{"negative duration", map[string]string{AnnotationReadyAfter: "-1s"}, faults{},
			`annotation sandbox.muster.dev/ready-after: expected a non-negative duration such as 30s, found "-1s"`},
		{"bad exit code", map[string]string{AnnotationExitCode: "one"}, faults{},
			`annotation sandbox.muster.dev/exit-code: expected an integer exit code, found "one"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFaults(testPod(false, tc.annotations), timing)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("expected error %q, found %v", tc.wantErr, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("expected %+v, found %+v (error %v)", tc.want, got, err)
			}
		})
	}
}

func TestFit(t *testing.T) {
	alloc := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("8"), v1.ResourcePods: resource.MustParse("3"), "nvidia.com/gpu": resource.MustParse("8"),
	}
	for _, tc := range []struct {
		name       string
		req, used  v1.ResourceList
		pods       int
		wantReason string
	}{
		{"fits", v1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}, v1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}, 1, ""},
		{"gpus taken", v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, v1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, 1, "OutOfnvidia.com/gpu"},
		{"cpu first by name", v1.ResourceList{v1.ResourceCPU: resource.MustParse("9"), "nvidia.com/gpu": resource.MustParse("9")}, nil, 0, "OutOfcpu"},
		{"resource the node lacks", v1.ResourceList{"example.com/fpga": resource.MustParse("1")}, nil, 0, "OutOfexample.com/fpga"},
		{"too many pods", nil, nil, 3, "OutOfpods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rej := fit(tc.req, tc.used, alloc, tc.pods)
			got := ""
			if rej != nil {
				got = rej.Reason
			}
			if got != tc.wantReason {
				t.Errorf("expected rejection %q, found %q (%+v)", tc.wantReason, got, rej)
			}
		})
	}
}

func TestFailedStatusTerminatesContainers(t *testing.T) {
	pod := testPod(false, nil)
	pod.Status, _ = renderStatus(pod, t0, t0.Add(time.Minute), faults{}, time.Second)
	got := failedStatus(pod, ReasonNodeLost, "node n is down", t0.Add(2*time.Minute))
	if want := "Failed ready=False main:terminated/ContainerStatusUnknown"; summary(got) != want || got.Reason != ReasonNodeLost {
		t.Errorf("expected %q reason %s, found %q reason %s", want, ReasonNodeLost, summary(got), got.Reason)
	}
}

func TestKilledStatusFailsThePodAndKeepsItsConditions(t *testing.T) {
	crashing := testPod(true, map[string]string{AnnotationFailInit: "true"})
	crashing.Status, _ = renderStatus(crashing, t0, t0.Add(time.Minute), faults{failInit: true}, time.Second)
	running := testPod(false, nil)
	running.Status, _ = renderStatus(running, t0, t0.Add(time.Minute), faults{}, time.Second)
	for _, p := range []*v1.Pod{crashing, running} {
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "StartTimeout"})
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
		code int32
	}{
		// A crash-looping init container is waiting: it is never found (SIGKILL).
		{"crash-looping", crashing, "Failed ready=False setup:terminated/ContainerStatusUnknown second:terminated/ContainerStatusUnknown main:terminated/ContainerStatusUnknown", exitCodeKilled},
		// A running container exits on SIGTERM.
		{"running", running, "Failed ready=False main:terminated/Error", exitCodeTerminated},
	} {
		got := killedStatus(tc.pod, t0.Add(2*time.Minute))
		if summary(got) != tc.want || got.Reason != "" {
			t.Errorf("%s: expected %q and no pod reason, found %q reason %q", tc.name, tc.want, summary(got), got.Reason)
		}
		if last := got.ContainerStatuses[0].State.Terminated; last == nil || last.ExitCode != tc.code {
			t.Errorf("%s: expected the main container to exit %d, found %+v", tc.name, tc.code, got.ContainerStatuses[0].State)
		}
		disrupted := false
		for _, c := range got.Conditions {
			disrupted = disrupted || c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue
		}
		if !disrupted {
			t.Errorf("%s: expected the DisruptionTarget condition kept, found %+v", tc.name, got.Conditions)
		}
	}
}

func TestStopWait(t *testing.T) {
	grace := func(s int64) *int64 { return &s }
	for _, tc := range []struct {
		name      string
		grace     *int64
		stopAfter time.Duration
		at        time.Duration // since the kubelet saw the deletion
		want      time.Duration
	}{
		{"stops at once", grace(30), 0, 0, 0},
		{"still stopping", grace(30), 20 * time.Second, 5 * time.Second, 15 * time.Second},
		{"stopped", grace(30), 20 * time.Second, 25 * time.Second, 0},
		{"killed at the end of the grace period", grace(30), time.Hour, 10 * time.Second, 20 * time.Second},
		{"grace period 0", grace(0), 20 * time.Second, 0, 0},
		{"no grace period", nil, 20 * time.Second, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stopWait(t0, tc.grace, tc.stopAfter, t0.Add(tc.at)); got != tc.want {
				t.Errorf("expected %s, found %s", tc.want, got)
			}
		})
	}
}
