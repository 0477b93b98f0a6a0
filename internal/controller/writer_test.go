package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestWriterGivesUpOnPermanentErrors: a write refused as Invalid (annotations too
// long) is handed back as refused, not as failed (which the loop retries on its next
// pass); a write that failed for a passing reason is handed back as failed.
func TestWriterGivesUpOnPermanentErrors(t *testing.T) {
	w := newStatusWriter(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.run(ctx)
	tooLong := apierrors.NewInvalid(schema.GroupKind{Group: "scheduling.x-k8s.io", Kind: "PodGroup"}, "full",
		field.ErrorList{field.TooLong(field.NewPath("metadata", "annotations"), "", 262144)})
	w.queue(groupWrite{key: "a", significant: "Queued", send: func(context.Context) error { return tooLong }})
	w.queue(groupWrite{key: "b", send: func(context.Context) error { return apierrors.NewServiceUnavailable("busy") }})
	var refused []refusal
	var failed []string
	deadline := time.Now().Add(30 * time.Second)
	for (len(refused) == 0 || len(failed) == 0) && time.Now().Before(deadline) {
		refused, failed = append(refused, w.takeRefused()...), append(failed, w.takeFailed()...)
		time.Sleep(time.Millisecond)
	}
	if len(refused) != 1 || refused[0].key != "a" || refused[0].significant != "Queued" || !errors.Is(refused[0].err, tooLong) {
		t.Errorf("expected write a refused for good, with its significance, found %+v", refused)
	}
	if len(failed) != 1 || failed[0] != "b" {
		t.Errorf("expected write b failed (to retry), found %v", failed)
	}
}
