package v1alpha1

import (
	"encoding/json"
	"fmt"
)

// RecordIn decodes the LifecycleAnnotation among annotations; ok is false when there is
// none. A tenant can write the annotation on its own group object: readers must treat
// what decodes as a claim, not a fact.
func RecordIn(annotations map[string]string) (rec GroupLifecycle, ok bool, err error) {
	raw := annotations[LifecycleAnnotation]
	if raw == "" {
		return rec, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return GroupLifecycle{}, false, fmt.Errorf("decoding the lifecycle record %q: %w", raw, err)
	}
	return rec, true, nil
}
