package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The API server refuses an object whose annotations take more than
// apivalidation.TotalAnnotationSizeLimitB (256 KiB: the keys' and values' lengths
// summed). muster adds two annotations to pods, the plan on the Bindings that carry it
// and a plain group's lifecycle record; before either it checks that the pod has room,
// and puts it on a member that does.

// ConditionPlanRecorded is the pod condition muster sets False on a member that has no
// room for its group's plan: the plan rides on other members.
const ConditionPlanRecorded corev1.PodConditionType = "muster.dev/PlanRecorded"

// ReasonAnnotationsTooLarge is the reason of ConditionPlanRecorded=False.
const ReasonAnnotationsTooLarge = "AnnotationsTooLarge"

// annotationBytes returns the size the API server counts for p's annotations with
// key set to value (replacing what key holds now).
func annotationBytes(p *corev1.Pod, key, value string) int {
	n := len(key) + len(value)
	for k, v := range p.Annotations {
		if k != key {
			n += len(k) + len(v)
		}
	}
	return n
}

// hasRoom reports whether p's annotations stay within the limit with key set to value.
func hasRoom(p *corev1.Pod, key, value string) bool {
	return annotationBytes(p, key, value) <= apivalidation.TotalAnnotationSizeLimitB
}

// markNoRoom sets ConditionPlanRecorded=False on p, naming the sizes: it has no room
// for the plan of size planBytes. It runs on the binder's workers.
func (b *binder) markNoRoom(ctx context.Context, p *corev1.Pod, key, value, rides string) {
	msg := fmt.Sprintf("the pod's annotations take %d bytes; with %s (%d bytes) they would take %d, more than the %d the API server accepts; the plan rides on %s",
		annotationBytes(p, key, "")-len(key), key, len(key)+len(value), annotationBytes(p, key, value),
		apivalidation.TotalAnnotationSizeLimitB, rides)
	patch := map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: ConditionPlanRecorded, Status: corev1.ConditionFalse, Reason: ReasonAnnotationsTooLarge,
		Message: msg, LastTransitionTime: metav1.NewTime(b.clock.Now()),
	}}}}
	data, err := json.Marshal(patch)
	if err == nil {
		_, err = b.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	}
	if err != nil && !apierrors.IsNotFound(err) {
		b.log.Error(err, "marking a pod that has no room for its group's plan", "pod", podKey(p))
	}
	b.event(p, corev1.EventTypeWarning, ReasonAnnotationsTooLarge, msg)
}
