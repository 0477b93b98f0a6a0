package explain

import (
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// RecordOf is engine.RecordOf, until the controller calls it there.
//
// Deprecated: use engine.RecordOf.
func RecordOf(st engine.Status) musterv1alpha1.GroupLifecycle { return engine.RecordOf(st) }

// PastOf is engine.PastOf, until the controller calls it there.
//
// Deprecated: use engine.PastOf.
func PastOf(r musterv1alpha1.GroupLifecycle) lifecycle.Past { return engine.PastOf(r) }

// EncodeRecord is engine.EncodeRecord, until the controller calls it there.
//
// Deprecated: use engine.EncodeRecord.
func EncodeRecord(st engine.Status) (string, error) { return engine.EncodeRecord(st) }

// RecordIn is musterv1alpha1.RecordIn, until the controller calls it there.
//
// Deprecated: use musterv1alpha1.RecordIn.
func RecordIn(annotations map[string]string) (musterv1alpha1.GroupLifecycle, bool, error) {
	return musterv1alpha1.RecordIn(annotations)
}
