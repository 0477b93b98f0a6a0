package sandboxtest

import (
	"time"

	"go.uber.org/goleak"
	"k8s.io/apiserver/pkg/server/healthz"
)

// leakGrace is how long goroutines of a stopped sandbox may take to exit. The
// longest legitimate one is kube-apiserver's watch-cache freshness wake-up
// (cacher.watchCache.waitUntilFreshLocked), which sleeps up to its 3s block
// timeout before returning.
const leakGrace = 10 * time.Second

// startProcessGoroutines starts the goroutines that kube-apiserver starts once per
// process and that never exit, so that a snapshot taken after it (IgnoreCurrent)
// excludes them rather than reporting them as leaks of the sandbox:
//   - healthz.LogHealthz's first Check starts a wait.Forever loop that flushes klog
//     every minute (guarded by a sync.Once; it has no stop channel). Upstream's
//     integration framework (test/integration/framework/goleak.go) does the same.
func startProcessGoroutines() {
	_ = healthz.LogHealthz.Check(nil)
}

// processWide ignores the goroutines of client-go's process-wide TLS transport cache
// that a kube-apiserver with a front-proxy client certificate (the aggregator's, which
// forwards to muster's visibility API) starts and nothing stops: the cache keeps one
// transport per certificate file for the life of the process and watches the file for
// rotation (transport.dynamicClientCert: its loop, its workqueue's two loops, its
// worker and its poller). They are not the sandbox's to stop.
var processWide = []goleak.Option{
	goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).run"),
	goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).processNextWorkItem"),
	// Its poller: wait.PollImmediateUntil (deprecated, used by nothing of the sandbox's).
	goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.PollImmediateUntil"),
	goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.PollImmediateUntilWithContext.poller.func1.1"),
	// Its workqueue's loops, whose stacks name only the workqueue.
	goleak.IgnoreTopFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
	goleak.IgnoreTopFunction("k8s.io/client-go/util/workqueue.(*Typed[...]).updateUnfinishedWorkLoop"),
}

// findLeaks reports goroutines that are not ignored by opts, retrying for up to
// leakGrace so that goroutines still winding down are not reported.
func findLeaks(opts []goleak.Option) error {
	deadline := time.Now().Add(leakGrace)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}
