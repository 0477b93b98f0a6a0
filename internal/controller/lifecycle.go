package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/metrics"
)

// defaultMetrics registers muster's collectors once with controller-runtime's registry,
// which the manager serves on metricsAddr. Several managers in one process (tests, a
// restart) share them.
var defaultMetrics = sync.OnceValue(func() *metrics.Metrics { return metrics.New(ctrlmetrics.Registry) })

// observe feeds one engine step to the metrics.
func (s *scheduler) observe(out engine.Output, took time.Duration) {
	s.metrics.Record(out, took)
	s.metrics.SetQueues(s.eng)
}

// writeLifecycles writes each group's lifecycle record where `muster explain` reads it:
// on the group object, or on the lowest-named member pod of a group that has none.
func (s *scheduler) writeLifecycles(ctx context.Context) {
	for _, key := range s.eng.Groups() {
		st, _ := s.eng.Group(key)
		data, err := json.Marshal(explain.RecordOf(st))
		if err != nil {
			s.log.Error(err, "encoding a lifecycle record", "group", key)
			continue
		}
		if s.recorded[key] == string(data) {
			continue
		}
		if err := s.writeLifecycle(ctx, key, string(data)); err != nil {
			s.log.Error(err, "writing a lifecycle record", "group", key)
			continue
		}
		s.recorded[key] = string(data)
	}
}

func (s *scheduler) writeLifecycle(ctx context.Context, key, record string) error {
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{musterv1alpha1.LifecycleAnnotation: record}}}
	if s.objects[key] != nil {
		ref := refOfKey(key)
		return s.patch(ctx, apiOf(ref.Source), ref.Namespace, ref.Name, patch)
	}
	pods := s.memberList(key)
	if len(pods) == 0 {
		return nil
	}
	first := slices.MinFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding a patch: %w", err)
	}
	_, err = s.kube.CoreV1().Pods(first.Namespace).Patch(ctx, first.Name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching pod %s/%s: %w", first.Namespace, first.Name, err)
	}
	return nil
}
