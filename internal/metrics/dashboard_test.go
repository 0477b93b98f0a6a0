package metrics_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/muster-sched/muster/internal/metrics"
)

// TestDashboardNamesExist: every metric the Grafana dashboard queries is one muster
// exports, so a renamed metric cannot leave a panel silently empty.
func TestDashboardNamesExist(t *testing.T) {
	data, err := os.ReadFile("../../deploy/grafana/muster-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	m.HeldResource.WithLabelValues("nvidia.com/gpu")
	m.QueueGroups.WithLabelValues("default", "Queued")
	m.QueueUsed.WithLabelValues("default", "nvidia.com/gpu")
	m.QueueBorrowed.WithLabelValues("default", "nvidia.com/gpu")
	m.Decisions.WithLabelValues("admitted")
	m.Evictions.WithLabelValues("StartTimeout")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.GetName()] = true
	}
	used := regexp.MustCompile(`muster_[a-z_]+`).FindAllString(string(data), -1)
	if len(used) == 0 {
		t.Fatal("the dashboard queries no muster metric")
	}
	for _, name := range used {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !exported[base] {
			t.Errorf("dashboard queries %s, which muster does not export", name)
		}
	}
}
