package kubelet

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Node condition reasons, as the kubelet writes them.
const (
	reasonKubeletReady    = "KubeletReady"
	reasonKubeletNotReady = "KubeletNotReady"
)

// updateOptions are the options of every update the kubelet sends.
var updateOptions = metav1.UpdateOptions{FieldManager: "muster-sandbox-kubelet"}

// unreachableTaint keeps schedulers off a node that is down, as the node lifecycle
// controller does on a real cluster.
var unreachableTaint = v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoSchedule}

// deleteNowOptions deletes the pod with uid at once, and only that pod.
func deleteNowOptions(uid types.UID) metav1.DeleteOptions {
	zero := int64(0)
	return metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}}
}

// syncNode makes the node's Ready condition and unreachable taint match whether it
// is marked down.
func (k *Kubelet) syncNode(ctx context.Context, name string) error {
	node, err := k.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	down, err := nodeDown(node)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring malformed annotation, node counts as up")
	}
	if hasTaint(node, unreachableTaint) != down {
		updated := node.DeepCopy()
		updated.Spec.Taints = withTaint(node.Spec.Taints, unreachableTaint, down)
		node, err = k.client.CoreV1().Nodes().Update(ctx, updated, updateOptions)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the informer brings the newer node
		} else if err != nil {
			return fmt.Errorf("updating taints of node %s: %w", name, err)
		}
	}
	want := readyCondition(!down, k.clock.Now())
	if cur := findReady(node); cur != nil && cur.Status == want.Status {
		return nil
	}
	updated := node.DeepCopy()
	updated.Status.Conditions = withCondition(updated.Status.Conditions, want)
	_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, updated, updateOptions)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("updating Ready condition of node %s: %w", name, err)
	}
	return nil
}

// readyCondition is the node Ready condition for a node that is up or down.
func readyCondition(up bool, now time.Time) v1.NodeCondition {
	c := v1.NodeCondition{
		Type:    v1.NodeReady,
		Status:  v1.ConditionTrue,
		Reason:  reasonKubeletReady,
		Message: "simulated kubelet is posting ready status",
	}
	if !up {
		c.Status, c.Reason = v1.ConditionFalse, reasonKubeletNotReady
		c.Message = "node is marked down by annotation " + AnnotationDown
	}
	t := metav1.NewTime(now).Rfc3339Copy()
	c.LastHeartbeatTime, c.LastTransitionTime = t, t
	return c
}

// findReady returns the node's Ready condition, or nil.
func findReady(node *v1.Node) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// withCondition returns conds with the condition of c's type replaced by c.
func withCondition(conds []v1.NodeCondition, c v1.NodeCondition) []v1.NodeCondition {
	for i := range conds {
		if conds[i].Type == c.Type {
			conds[i] = c
			return conds
		}
	}
	return append(conds, c)
}

// hasTaint reports whether node carries a taint with t's key and effect.
func hasTaint(node *v1.Node, t v1.Taint) bool {
	for _, cur := range node.Spec.Taints {
		if cur.MatchTaint(&t) {
			return true
		}
	}
	return false
}

// withTaint returns taints with t added (on) or removed (!on).
func withTaint(taints []v1.Taint, t v1.Taint, on bool) []v1.Taint {
	out := make([]v1.Taint, 0, len(taints)+1)
	for _, cur := range taints {
		if !cur.MatchTaint(&t) {
			out = append(out, cur)
		}
	}
	if on {
		out = append(out, t)
	}
	return out
}
