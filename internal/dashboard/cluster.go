package dashboard

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/source"
)

// Hold is what holds one device, the colour of its cell on the cluster page.
type Hold string

// The holds, from the heat map's legend.
const (
	// Training: the holding group is Running (minMember members Ready).
	Training Hold = "training"
	// Starting: the group is admitted and bound, not Ready yet.
	Starting Hold = "starting"
	// Held: the group is not whole (Recovering, Gathering with a member left bound,
	// Backoff) or is being evicted: the device is held and does no work.
	Held Hold = "held"
	// Other: a pod of another scheduler holds it.
	Other Hold = "other"
	// Free: nothing holds it.
	Free Hold = "free"
	// Down: the node is not Ready, or is cordoned.
	Down Hold = "down"
)

// legend lists the holds in the order the page explains them.
var legend = []struct {
	Hold  Hold
	Label string
}{
	{Training, "training (group Running)"},
	{Starting, "starting (admitted, not Ready yet)"},
	{Held, "held by an incomplete or evicting group"},
	{Other, "held by another scheduler's pod"},
	{Free, "free"},
	{Down, "node down or cordoned"},
}

// Cell is one device of a node.
type Cell struct {
	Hold Hold
	// Pod and Group hold the device; Group is empty for other schedulers' pods.
	Pod   string
	Group string
	// Link is the group's page.
	Link  string
	Title string
}

// NodeRow is one node: its devices, in the order of the node's device resources.
type NodeRow struct {
	Name  string
	Down  bool
	Cells []Cell
	// Summary counts the cells by hold, for the row's accessible label.
	Summary string
}

// Heat is the cluster page: every node's row, and the totals per hold.
type Heat struct {
	Rows   []NodeRow
	Totals map[Hold]int
	// Devices names the device resources counted.
	Devices []string
}

// devices returns the extended resources a node offers (nvidia.com/gpu, ...), sorted:
// the resources the heat map draws one cell per unit of.
func devices(n *corev1.Node) []corev1.ResourceName {
	var out []corev1.ResourceName
	for name, q := range n.Status.Allocatable {
		if strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) && q.Value() > 0 {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// request returns how many units of name a pod requests: the larger of its containers'
// sum and its largest init container, as kube-scheduler counts.
func request(p *corev1.Pod, name corev1.ResourceName) int64 {
	var sum, initMax int64
	for _, c := range p.Spec.Containers {
		sum += amountOf(c.Resources, name)
	}
	for _, c := range p.Spec.InitContainers {
		initMax = max(initMax, amountOf(c.Resources, name))
	}
	return max(sum, initMax)
}

func amountOf(r corev1.ResourceRequirements, name corev1.ResourceName) int64 {
	if q, ok := r.Requests[name]; ok {
		return q.Value()
	}
	if q, ok := r.Limits[name]; ok {
		return q.Value()
	}
	return 0
}

// nodeDown reports whether a node cannot run pods: cordoned, or its Ready condition
// is not True.
func nodeDown(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}

// holdOf returns what a bound pod's devices are held as.
func holdOf(m *model, p *corev1.Pod, schedulerNames []string) (Hold, *group) {
	if !slices.Contains(schedulerNames, p.Spec.SchedulerName) {
		return Other, nil
	}
	g := m.groups[source.GroupOf(p).Key()]
	if p.DeletionTimestamp != nil {
		return Held, g
	}
	switch g.phase() {
	case "Running", "Finished":
		return Training, g
	case "Binding", "Starting", "":
		// No record yet: muster bound it this moment and has not written one.
		return Starting, g
	}
	return Held, g
}

// heat builds the cluster page from m.
func heat(m *model, schedulerNames []string) Heat {
	h := Heat{Totals: map[Hold]int{}}
	byNode := map[string][]*corev1.Pod{}
	for i := range m.pods {
		p := &m.pods[i]
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	seen := map[corev1.ResourceName]bool{}
	nodes := append([]corev1.Node(nil), m.nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for i := range nodes {
		n := &nodes[i]
		row := NodeRow{Name: n.Name, Down: nodeDown(n)}
		pods := byNode[n.Name]
		sort.Slice(pods, func(i, j int) bool { return podKey(pods[i]) < podKey(pods[j]) })
		for _, res := range devices(n) {
			seen[res] = true
			row.Cells = append(row.Cells, cells(m, n, res, pods, row.Down, schedulerNames)...)
		}
		counts := map[Hold]int{}
		for _, c := range row.Cells {
			counts[c.Hold]++
			h.Totals[c.Hold]++
		}
		row.Summary = summary(n.Name, counts)
		h.Rows = append(h.Rows, row)
	}
	for res := range seen {
		h.Devices = append(h.Devices, string(res))
	}
	sort.Strings(h.Devices)
	return h
}

// cells returns the cells of one device resource of node n: one per unit, the units
// held by pods first (in pod order), then the free ones.
func cells(m *model, n *corev1.Node, res corev1.ResourceName, pods []*corev1.Pod, down bool, schedulerNames []string) []Cell {
	total := n.Status.Allocatable[res]
	count := int(total.Value())
	out := make([]Cell, 0, count)
	for _, p := range pods {
		hold, g := holdOf(m, p, schedulerNames)
		c := Cell{Hold: hold, Pod: podKey(p)}
		if g != nil {
			c.Group, c.Link = g.ref.Namespace+"/"+g.ref.Name, groupLink(g.ref)
		}
		for u := int64(0); u < request(p, res) && len(out) < count; u++ {
			c.Title = fmt.Sprintf("%s %s #%d: %s, pod %s", n.Name, res, len(out), hold, c.Pod)
			if c.Group != "" {
				c.Title += ", group " + c.Group
			}
			out = append(out, c)
		}
	}
	for len(out) < count {
		c := Cell{Hold: Free}
		if down {
			c.Hold = Down
		}
		c.Title = fmt.Sprintf("%s %s #%d: %s", n.Name, res, len(out), c.Hold)
		out = append(out, c)
	}
	return out
}

// summary says what a node's cells are, for screen readers: "gpu-3: 4 training, 4 free".
func summary(node string, counts map[Hold]int) string {
	var parts []string
	for _, l := range legend {
		if n := counts[l.Hold]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, l.Hold))
		}
	}
	if len(parts) == 0 {
		return node + ": no devices"
	}
	return node + ": " + strings.Join(parts, ", ")
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
