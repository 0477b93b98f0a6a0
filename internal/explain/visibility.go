package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/placement"
)

// muster's visibility API, served by `muster serve` behind the API server (an
// APIService): it answers, with muster's rights and from muster's cache, what a
// tenant's explain may not read itself.
const (
	VisibilityGroup   = "visibility.muster.dev"
	VisibilityVersion = "v1alpha1"
	// ExplanationsResource is its one resource, namespaced, read with get.
	ExplanationsResource = "explanations"
	// ExplanationKind is the kind of what a get answers.
	ExplanationKind = "Explanation"
)

// ExplanationsGroupResource is the resource explanations.visibility.muster.dev, as
// RBAC rules and errors name it.
var ExplanationsGroupResource = schema.GroupResource{Group: VisibilityGroup, Resource: ExplanationsResource}

// Explanation is the visibility API's answer for one group: the part of explain that
// needs the cluster's nodes and every namespace's pods (the what-if fit of the group's
// unplaced members now), and the group's Queue.
type Explanation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	// Source is the group's API; metadata.name is the group's name.
	Source engine.Source `json:"source"`
	// Phase is the group's phase in muster's record; empty when muster has recorded
	// none.
	Phase string `json:"phase,omitempty"`
	// Fit is a what-if: placement's diagnosis of the group's unplaced members on the
	// cluster as muster's cache has it now, when the group is Queued and they do not
	// fit; FitsNow is true when they fit. Neither is the scheduler's decision, which
	// the group's lifecycle record holds.
	Fit     *placement.Diagnosis `json:"fit,omitempty"`
	FitsNow bool                 `json:"fitsNow,omitempty"`
	// Queue is the group's Queue, spec and status, when it exists.
	Queue *musterv1alpha1.Queue `json:"queue,omitempty"`
	// Computed is when muster computed the answer.
	Computed metav1.Time `json:"computed"`
}

// ExplanationPath is the API server path of the explanation of group name in
// namespace.
func ExplanationPath(namespace, name string) string {
	return path.Join("/apis", VisibilityGroup, VisibilityVersion, "namespaces", namespace, ExplanationsResource, name)
}

// Explain answers the visibility API's get for group name of source in namespace,
// from r (muster's cache). A group muster cannot find is a NotFound error.
func Explain(ctx context.Context, r Reader, namespace, name string, source engine.Source, schedulerNames []string, now time.Time) (*Explanation, error) {
	target := "podgroup/" + name
	if source == engine.Labels {
		target = "group/" + name
	}
	f, err := Gather(ctx, r, target, namespace, schedulerNames, now)
	if err != nil {
		return nil, err
	}
	if !f.GroupFound || (source != "" && f.Spec.Source != source) {
		return nil, apierrors.NewNotFound(ExplanationsGroupResource, name)
	}
	e := &Explanation{
		TypeMeta:   metav1.TypeMeta{APIVersion: VisibilityGroup + "/" + VisibilityVersion, Kind: ExplanationKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Source:     f.Spec.Source,
		Fit:        f.Fit,
		FitsNow:    f.FitsNow,
		Queue:      f.Queue,
		Computed:   metav1.NewTime(now),
	}
	if f.Lifecycle != nil {
		e.Phase = f.Lifecycle.Phase
	}
	return e, nil
}

// Explanation asks muster's visibility API, through the API server and with the
// caller's own credentials, for the explanation of group name of source in namespace.
func (c Clients) Explanation(ctx context.Context, namespace, name string, source engine.Source) (*Explanation, error) {
	raw, err := c.Kube.Discovery().RESTClient().Get().AbsPath(ExplanationPath(namespace, name)).
		Param("source", string(source)).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var e Explanation
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("decoding the visibility API's answer: %w", err)
	}
	if e.Kind != ExplanationKind {
		return nil, fmt.Errorf("the visibility API answered kind %q: expected %s", e.Kind, ExplanationKind)
	}
	return &e, nil
}

// visibility is a Reader that can also ask muster's visibility API (Clients can).
type visibility interface {
	Explanation(ctx context.Context, namespace, name string, source engine.Source) (*Explanation, error)
}
