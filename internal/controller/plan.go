package controller

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/muster-sched/muster/internal/engine"
)

// decodePlan decodes the text of a muster.dev/placement annotation and checks its shape:
// what a restarted muster reads back from a bound pod, which anyone who can write the pod
// may have written. A plan names its group as SOURCE/namespace/name with a source muster
// knows, counts its attempt from 1, and gives each member (a pod name) a node name and a
// UID. The error names the first field that is not so, and the value.
func decodePlan(raw string) (*Plan, error) {
	p := &Plan{}
	if err := json.Unmarshal([]byte(raw), p); err != nil {
		return nil, fmt.Errorf("decoding the plan: %w", err)
	}
	if err := checkPlan(p); err != nil {
		return nil, fmt.Errorf("the plan of %q is malformed: %w", p.Group, err)
	}
	return p, nil
}

// checkPlan returns an error naming the first field of p that is malformed, or nil.
func checkPlan(p *Plan) error {
	ref := refOfKey(p.Group)
	switch ref.Source {
	case engine.Coscheduling, engine.Volcano, engine.Native, engine.Labels, engine.Single:
	default:
		return fmt.Errorf("group: %q: expected SOURCE/namespace/name with a source muster knows", p.Group)
	}
	if ref.Key() != p.Group || len(validation.IsDNS1123Label(ref.Namespace)) > 0 || !validGroupName(ref.Source, ref.Name) {
		return fmt.Errorf("group: %q: expected SOURCE/namespace/name of a namespace and a group name", p.Group)
	}
	if p.Attempt < 1 {
		return fmt.Errorf("attempt: %d: expected 1 or more", p.Attempt)
	}
	if len(p.Pods) == 0 {
		return errors.New("pods: empty: expected the members' nodes")
	}
	for _, name := range sortedKeys(p.Pods) {
		a := p.Pods[name]
		switch {
		case len(validation.IsDNS1123Subdomain(name)) > 0:
			return fmt.Errorf("pods: %q: expected a pod name", name)
		case len(validation.IsDNS1123Subdomain(a.Node)) > 0:
			return fmt.Errorf("pods[%s].node: %q: expected a node name", name, a.Node)
		case a.UID == "":
			return fmt.Errorf("pods[%s].uid: empty: expected the pod's UID", name)
		}
	}
	return nil
}

// validGroupName reports whether name can name a group of source: a label value for a plain
// group (its muster.dev/group label), an object name (a group object's, or a pod's for a
// Single group) otherwise.
func validGroupName(source engine.Source, name string) bool {
	if source == engine.Labels {
		return name != "" && len(validation.IsValidLabelValue(name)) == 0
	}
	return len(validation.IsDNS1123Subdomain(name)) == 0
}
