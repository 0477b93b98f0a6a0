package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// writeVerbs are the request verbs, as apiserver_request_total labels them, that
// change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// requestCounts is apiserver_request_total summed over codes and scopes, by verb and
// resource (with its subresource), e.g. "POST pods/binding".
type requestCounts map[string]float64

// scrapeRequests reads the API server's request counters from its /metrics.
func scrapeRequests(ctx context.Context, client kubernetes.Interface) (requestCounts, error) {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's /metrics: %w", err)
	}
	counts := requestCounts{}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return nil, fmt.Errorf("the API server's /metrics: expected apiserver_request_total, found %d other families", len(families))
	}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		resource := labels["resource"]
		if resource == "" {
			continue // non-resource paths: health, discovery
		}
		if sub := labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		counts[labels["verb"]+" "+resource] += m.GetCounter().GetValue()
	}
	return counts, nil
}

// writesSince returns the write requests made between before and c, by verb and
// resource, without the zero ones.
func (c requestCounts) writesSince(before requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		verb, _, _ := strings.Cut(k, " ")
		if d := v - before[k]; writeVerbs[verb] && d > 0 {
			out[k] = d
		}
	}
	return out
}

// total sums the counts.
func (c requestCounts) total() float64 {
	t := 0.0
	for _, v := range c {
		t += v
	}
	return t
}

// String lists the counts, largest first, e.g. "POST pods/binding 4008, PATCH pods/status 4001".
func (c requestCounts) String() string {
	keys := slices.SortedFunc(maps.Keys(c), func(a, b string) int {
		return cmp.Or(cmp.Compare(c[b], c[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, c[k])
	}
	return strings.Join(parts, ", ")
}
