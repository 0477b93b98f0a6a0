package e2e

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// parseConditions decodes the muster.dev/status annotation; "" is no conditions.
func parseConditions(v string) ([]metav1.Condition, error) {
	if v == "" {
		return nil, nil
	}
	var conds []metav1.Condition
	if err := json.Unmarshal([]byte(v), &conds); err != nil {
		return nil, fmt.Errorf("decoding muster.dev/status %q: %w", v, err)
	}
	return conds, nil
}
