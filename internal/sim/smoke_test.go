package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

func TestSmoke(t *testing.T) {
	e := engine.New(engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(), StarvationThreshold: 10 * time.Minute})
	e.SetQueue(engine.Queue{Name: "default"})
	w := New(e)
	for i := 0; i < 8; i++ {
		w.AddNode(gt.Node(fmt.Sprintf("n-%d", i)).GPU(1).Obj())
	}
	w.Submit(&Job{Name: "a", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second})
	w.Submit(&Job{Name: "b", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second})
	w.RunFor(30 * time.Minute)
	t.Log("\n" + strings.Join(w.Timeline, "\n"))
	_ = queue.Options{}
}
