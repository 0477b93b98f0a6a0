package kubelet

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Annotations that inject behaviour into the simulated kubelet. They are read from
// the pod (or, for AnnotationDown, the node) every time the kubelet syncs it.
const (
	// AnnotationFailInit ("true") makes the pod's initialisation fail: its first init
	// container (or, with none, its containers) exits with 1. As a real kubelet does,
	// the container then waits in CrashLoopBackOff and the pod never becomes Ready, or,
	// with restartPolicy Never, the pod is Failed.
	AnnotationFailInit = "sandbox.muster.dev/fail-init"
	// AnnotationReadyAfter (a duration such as "30s") is how long the containers run
	// before the pod becomes Ready; it overrides Timing.ReadyDelay.
	AnnotationReadyAfter = "sandbox.muster.dev/ready-after"
	// AnnotationRunFor (a duration such as "10m") is how long the containers run
	// before they exit; it overrides Timing.RunFor.
	AnnotationRunFor = "sandbox.muster.dev/run-for"
	// AnnotationExitCode (an integer, default "0") is the exit code of the
	// containers when they exit: 0 makes the pod Succeeded, anything else Failed.
	AnnotationExitCode = "sandbox.muster.dev/exit-code"
	// AnnotationStopAfter (a duration such as "20s") is how long the containers take to
	// exit once the pod is deleted (a SIGTERM handler that checkpoints), up to the
	// deletion's grace period (terminationGracePeriodSeconds), after which they are
	// killed. Until then the pod stays on its node, terminating. Default 0.
	AnnotationStopAfter = "sandbox.muster.dev/stop-after"
	// AnnotationDown ("true") on a Node turns it NotReady and fails its pods.
	AnnotationDown = "sandbox.muster.dev/down"
	// AnnotationLostOnDelete ("true") makes the kubelet never confirm the pod's
	// deletion, as a kubelet cut off from its node: the pod stays bound and Running,
	// with its deletionTimestamp, until it is deleted with grace period 0.
	AnnotationLostOnDelete = "sandbox.muster.dev/lost-on-delete"
)

// lostOnDelete reports whether pod carries AnnotationLostOnDelete set to a true value.
// A malformed value counts as false and is reported as an error.
func lostOnDelete(pod *v1.Pod) (bool, error) {
	return boolAnnotation(pod.Annotations, AnnotationLostOnDelete)
}

// boolAnnotation parses annotation key of a as true or false, false when it is absent.
func boolAnnotation(a map[string]string, key string) (bool, error) {
	v, ok := a[key]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("annotation %s: expected true or false, found %q", key, v)
	}
	return b, nil
}

// faults is what a pod's annotations ask the kubelet to simulate.
type faults struct {
	failInit   bool
	readyAfter time.Duration
	runFor     time.Duration
	exitCode   int32
	stopAfter  time.Duration
}

// parseFaults reads the fault annotations of pod, starting from the defaults in t.
// An annotation with a malformed value is an error naming the annotation and value.
func parseFaults(pod *v1.Pod, t Timing) (faults, error) {
	f := faults{readyAfter: t.ReadyDelay, runFor: t.RunFor}
	a := pod.Annotations
	var err error
	if f.failInit, err = boolAnnotation(a, AnnotationFailInit); err != nil {
		return f, err
	}
	if f.readyAfter, err = durationAnnotation(a, AnnotationReadyAfter, f.readyAfter); err != nil {
		return f, err
	}
	if f.runFor, err = durationAnnotation(a, AnnotationRunFor, f.runFor); err != nil {
		return f, err
	}
	if f.stopAfter, err = durationAnnotation(a, AnnotationStopAfter, 0); err != nil {
		return f, err
	}
	if v, ok := a[AnnotationExitCode]; ok {
		code, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return f, fmt.Errorf("annotation %s: expected an integer exit code, found %q", AnnotationExitCode, v)
		}
		f.exitCode = int32(code)
	}
	return f, nil
}

// durationAnnotation parses annotation key of a as a non-negative duration, or
// returns def when it is absent.
func durationAnnotation(a map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := a[key]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return def, fmt.Errorf("annotation %s: expected a non-negative duration such as 30s, found %q", key, v)
	}
	return d, nil
}

// nodeDown reports whether node carries AnnotationDown set to a true value. A
// malformed value counts as up and is reported as an error.
func nodeDown(node *v1.Node) (bool, error) {
	down, err := boolAnnotation(node.Annotations, AnnotationDown)
	if err != nil {
		return false, fmt.Errorf("node %s %w", node.Name, err)
	}
	return down, nil
}
