package placement_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// psJob is a job of one parameter server (3 CPUs, no GPU) and workers (a GPU and a CPU
// each), the parameter server first, minMember 3, each member named by its task.
func psJob(workers int, minimums map[string]int) placement.Group {
	g := placement.Group{Name: "job", MinMember: 3, TaskMinimums: minimums}
	ps := gt.Pod("job-ps-0").Req(corev1.ResourceCPU, "3").Obj()
	g.Members = append(g.Members, placement.Member{Name: ps.Name, Pod: ps, Task: "ps"})
	for i := range workers {
		w := gt.Pod("job-worker-"+strconv.Itoa(i)).GPU(1).Req(corev1.ResourceCPU, "1").Obj()
		g.Members = append(g.Members, placement.Member{Name: w.Name, Pod: w, Task: "worker"})
	}
	return g
}

func placedNames(p *placement.Plan) []string {
	var out []string
	for _, a := range p.Assignments {
		out = append(out, a.Member)
	}
	slices.Sort(out)
	return out
}

// TestTaskMinimums: a group's task minimums (a Volcano PodGroup's minTaskMember) are
// placed first. Two nodes of 4 CPUs and 2 GPUs: the workers, which ask for the scarce
// GPUs, are placed first and take a CPU each from both nodes, so the parameter server's
// 3 CPUs fit nowhere; minMember 3 alone admits four workers and no parameter server.
func TestTaskMinimums(t *testing.T) {
	nodes := func() []*corev1.Node {
		return gt.Nodes("n", 2, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(2).CPU("4") })
	}

	t.Run("minMember alone leaves the task out", func(t *testing.T) {
		plan, diag := placement.Place(cluster.New(nodes(), nil), psJob(4, nil), placement.Options{})
		if diag != nil {
			t.Fatalf("want a plan, got %v", diag)
		}
		if plan.NodeOf("job-ps-0") != "" {
			t.Fatalf("the scenario no longer needs the minimums: ps placed on %s", plan.NodeOf("job-ps-0"))
		}
	})

	for name, prepare := range map[string]func(placement.Group) placement.Group{
		"placed":   func(g placement.Group) placement.Group { return g },
		"prepared": placement.Prepare,
	} {
		t.Run("the minimums are placed first/"+name, func(t *testing.T) {
			g := prepare(psJob(4, map[string]int{"ps": 1, "worker": 2}))
			plan, diag := placement.Place(cluster.New(nodes(), nil), g, placement.Options{})
			if diag != nil {
				t.Fatalf("want a plan, got %v", diag)
			}
			got := placedNames(plan)
			if !slices.Contains(got, "job-ps-0") || len(got) != 4 || len(plan.Unplaced) != 1 {
				t.Fatalf("placed %v, unplaced %v: want the ps and 3 workers, one worker left out", got, plan.Unplaced)
			}
		})
	}

	t.Run("a task short of room fails the group and is named", func(t *testing.T) {
		busy := gt.Pod("other").Req(corev1.ResourceCPU, "2").Node("n-0").Obj()
		busy2 := gt.Pod("other2").Req(corev1.ResourceCPU, "2").Node("n-1").Obj()
		snap := cluster.New(nodes(), []*corev1.Pod{busy, busy2})
		if plan, _ := placement.Place(snap, psJob(4, nil), placement.Options{}); plan == nil {
			t.Fatal("without minimums the workers should fit")
		} else {
			plan.Revert()
		}
		plan, diag := placement.Place(snap, psJob(4, map[string]int{"ps": 1}), placement.Options{})
		if plan != nil {
			t.Fatalf("want no plan, got %v", placedNames(plan))
		}
		if diag.Code != placement.Unschedulable {
			t.Fatalf("code %s, want Unschedulable: %v", diag.Code, diag)
		}
		want := "task ps: 0 of its minimum 1 members can be placed with the others"
		if !strings.Contains(diag.String(), want) {
			t.Fatalf("diagnosis %q does not contain %q", diag, want)
		}
	})

	t.Run("a task with fewer members than its minimum is impossible", func(t *testing.T) {
		g := psJob(4, map[string]int{"ps": 2, "worker": 2})
		plan, diag := placement.Place(cluster.New(nodes(), nil), g, placement.Options{})
		if plan != nil || diag.Code != placement.Impossible {
			t.Fatalf("want Impossible, got plan %v, diagnosis %v", plan, diag)
		}
		if want := "task ps has 1 members; its minimum is 2"; diag.String() != want {
			t.Fatalf("diagnosis %q, want %q", diag, want)
		}
	})

	t.Run("a core member that fits no empty node is impossible", func(t *testing.T) {
		g := psJob(4, map[string]int{"ps": 1})
		g.Members[0].Pod = gt.Pod("job-ps-0").Req(corev1.ResourceCPU, "5").Obj()
		_, diag := placement.Place(cluster.New(nodes(), nil), g, placement.Options{})
		if diag == nil || diag.Code != placement.Impossible {
			t.Fatalf("want Impossible, got %v", diag)
		}
	})

	t.Run("the signature tells the minimums apart", func(t *testing.T) {
		a, b := placement.Signature(psJob(4, nil)), placement.Signature(psJob(4, map[string]int{"ps": 1}))
		c := placement.Signature(psJob(4, map[string]int{"ps": 1, "worker": 1}))
		if a == b || b == c || a == c {
			t.Fatalf("signatures should differ:\n%s\n%s\n%s", a, b, c)
		}
	})
}

// taskOracle reports whether some assignment of c's members to nodes (or to none)
// places at least minMember members and each task's minimum, by brute force.
func taskOracle(c oracleCase) bool {
	snap := cluster.New(c.nodes, c.bound)
	nodes := snap.Nodes()
	placed := map[string]int{}
	var try func(i, total int) bool
	try = func(i, total int) bool {
		if i == len(c.group.Members) {
			if total < c.group.MinMember {
				return false
			}
			for task, n := range c.group.TaskMinimums {
				if placed[task] < n {
					return false
				}
			}
			return true
		}
		m := c.group.Members[i]
		req := cluster.PodRequests(m.Pod)
		for _, n := range nodes {
			if !eligible(n, m.Pod) || n.Fits(req) == 0 {
				continue
			}
			undo := snap.Assume(n, req)
			placed[m.Task]++
			ok := try(i+1, total+1)
			placed[m.Task]--
			undo()
			if ok {
				return true
			}
		}
		return try(i+1, total)
	}
	return try(0, 0)
}

// TestTaskMinimumsAgainstOracle checks placement with task minimums against brute force
// on random small clusters: every plan is valid and places each task's minimum, and a
// group whose members share one shape (they differ only in their task) gets a plan
// whenever the oracle finds one. With mixed shapes placement is greedy, as without
// minimums (see TestAgainstOracle).
func TestTaskMinimumsAgainstOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCase(t)
		count := map[string]int{}
		for i := range c.group.Members {
			task := rapid.SampledFrom([]string{"a", "b", ""}).Draw(t, "task")
			c.group.Members[i].Task = task
			count[task]++
		}
		c.group.TaskMinimums = map[string]int{}
		sum := 0
		for _, task := range []string{"a", "b"} {
			if n := rapid.IntRange(0, count[task]).Draw(t, "minimum"); n > 0 {
				c.group.TaskMinimums[task] = n
				sum += n
			}
		}
		c.group.MinMember = max(c.group.MinMember, sum)
		plan, diag := placement.Place(cluster.New(c.nodes, c.bound), c.group, placement.Options{})
		if plan != nil {
			checkPlan(t, c, plan)
			tasks := map[string]int{}
			for _, a := range plan.Assignments {
				for _, m := range c.group.Members {
					if m.Name == a.Member {
						tasks[m.Task]++
					}
				}
			}
			for task, n := range c.group.TaskMinimums {
				if tasks[task] < n {
					t.Fatalf("plan places %d members of task %s, fewer than its minimum %d", tasks[task], task, n)
				}
			}
		}
		if !c.mixed && plan == nil && taskOracle(c) {
			t.Fatalf("the oracle places every task's minimum and minMember %d, but Place failed: %v", c.group.MinMember, diag)
		}
	})
}
