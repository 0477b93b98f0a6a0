package source

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

// lookup returns the value of a per-group annotation and whether it is set.
type lookup func(key string) (string, bool)

// objectLookup reads annotations from a group object.
func objectLookup(annotations map[string]string) lookup {
	return func(key string) (string, bool) {
		v, ok := annotations[key]
		return v, ok
	}
}

// podsLookup reads annotations from member pods. Pods that do not carry an annotation do
// not count; when the pods that do disagree, the disagreement is recorded in spec.Invalid
// and the annotation reads as unset.
func podsLookup(spec *engine.GroupSpec, pods []*corev1.Pod) lookup {
	return func(key string) (string, bool) {
		byValue := map[string][]string{}
		for _, p := range pods {
			if v, ok := p.Annotations[key]; ok {
				byValue[v] = append(byValue[v], p.Name)
			}
		}
		switch len(byValue) {
		case 0:
			return "", false
		case 1:
			for v := range byValue {
				return v, true
			}
		}
		spec.Invalid = append(spec.Invalid, fmt.Sprintf("%s: members disagree: %s",
			annotationField(key), describeSplit(byValue)))
		return "", false
	}
}

// describeSplit renders values and the pods giving each, in value order:
// `"8" on a-0, a-1; "4" on a-2`.
func describeSplit(byValue map[string][]string) string {
	values := make([]string, 0, len(byValue))
	for v := range byValue {
		values = append(values, v)
	}
	slices.Sort(values)
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprintf("%q on %s", v, podNames(byValue[v]))
	}
	return strings.Join(parts, "; ")
}

// maxNamedPods bounds how many pods a message names before summarising the rest.
const maxNamedPods = 5

// podNames renders pod names sorted, naming at most maxNamedPods of them.
func podNames(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= maxNamedPods {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamedPods], ", "), len(names)-maxNamedPods)
}

// annotationField is the field path of annotation key, for messages.
func annotationField(key string) string {
	return "metadata.annotations[" + key + "]"
}

// invalidAnnotation records a malformed annotation value.
func invalidAnnotation(spec *engine.GroupSpec, key, value, expected string) {
	spec.Invalid = append(spec.Invalid, fmt.Sprintf("%s: %q: %s", annotationField(key), value, expected))
}

// applyAnnotations reads the per-group annotations into spec, overriding what the group's
// API set, and records each malformed value in spec.Invalid.
func applyAnnotations(spec *engine.GroupSpec, look lookup) {
	if v, ok := look(musterv1alpha1.QueueAnnotation); ok {
		if len(validation.IsDNS1123Subdomain(v)) > 0 {
			invalidAnnotation(spec, musterv1alpha1.QueueAnnotation, v,
				"expected a Queue name: lower-case letters, digits, '-' and '.'")
		} else {
			spec.Queue = v
		}
	}
	durations := []struct {
		key string
		dst **time.Duration
	}{
		{musterv1alpha1.StartTimeoutAnnotation, &spec.Policy.StartTimeout},
		{musterv1alpha1.RecoveryTimeoutAnnotation, &spec.Policy.RecoveryTimeout},
		{musterv1alpha1.BackoffBaseAnnotation, &spec.Policy.BackoffBase},
		{musterv1alpha1.BackoffMaxAnnotation, &spec.Policy.BackoffMax},
	}
	var backoffMax string
	for _, d := range durations {
		if v, ok := look(d.key); ok {
			if dur, ok := parseDuration(spec, d.key, v); ok {
				*d.dst = &dur
			}
			if d.key == musterv1alpha1.BackoffMaxAnnotation {
				backoffMax = v
			}
		}
	}
	if v, ok := look(musterv1alpha1.MaxRetriesAnnotation); ok {
		if n, ok := parseCount(spec, musterv1alpha1.MaxRetriesAnnotation, v, 0); ok {
			spec.Policy.MaxRetries = &n
		}
	}
	if base, bmax := spec.Policy.BackoffBase, spec.Policy.BackoffMax; base != nil && bmax != nil && *bmax < *base {
		invalidAnnotation(spec, musterv1alpha1.BackoffMaxAnnotation, backoffMax,
			fmt.Sprintf("must be at least %s (%s)", musterv1alpha1.BackoffBaseAnnotation, *base))
	}
	if v, ok := look(musterv1alpha1.TopologyAnnotation); ok {
		if labelKey(spec, musterv1alpha1.TopologyAnnotation, v) {
			spec.Topology.Required = v
		}
	}
	if v, ok := look(musterv1alpha1.TopologyPreferredAnnotation); ok {
		if labelKey(spec, musterv1alpha1.TopologyPreferredAnnotation, v) {
			spec.Topology.Preferred = v
		}
	}
}

// parseDuration parses a positive Go duration annotation.
func parseDuration(spec *engine.GroupSpec, key, v string) (time.Duration, bool) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		invalidAnnotation(spec, key, v, `expected a duration such as "30s" or "5m"`)
		return 0, false
	case d <= 0:
		invalidAnnotation(spec, key, v, "expected a duration greater than 0")
		return 0, false
	}
	return d, true
}

// parseCount parses a decimal integer annotation no smaller than least.
func parseCount(spec *engine.GroupSpec, key, v string, least int) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		invalidAnnotation(spec, key, v, fmt.Sprintf("expected a whole number of %d or more", least))
		return 0, false
	}
	return n, true
}

// labelKey checks that an annotation value is a node label key.
func labelKey(spec *engine.GroupSpec, key, v string) bool {
	if len(validation.IsQualifiedName(v)) > 0 {
		invalidAnnotation(spec, key, v, `expected a node label key such as "topology.kubernetes.io/zone"`)
		return false
	}
	return true
}
