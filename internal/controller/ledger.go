package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/muster-sched/muster/internal/dashboard"
)

// ledgerPeriod is how often the leader writes the cost ledger when it changed.
const ledgerPeriod = 30 * time.Second

// ledgerStore keeps the dashboard's cost ledger in the dashboard.LedgerConfigMap of
// muster's namespace: the leader reads it back when it starts leading (so the cost of
// the last day survives a restart or a hand-over) and writes it every ledgerPeriod
// when it changed, and once more when it stops.
type ledgerStore struct {
	ledger    *dashboard.Ledger
	kube      kubernetes.Interface
	namespace string
	clock     clock.WithTicker
	log       logr.Logger
	// stored is the ConfigMap last read or written; nil when there is none yet.
	stored *corev1.ConfigMap
}

var _ manager.LeaderElectionRunnable = (*ledgerStore)(nil)

// NeedLeaderElection reports that only the leader, which feeds the ledger, writes it.
func (l *ledgerStore) NeedLeaderElection() bool { return true }

// Start restores the ledger, then writes it until ctx is done.
func (l *ledgerStore) Start(ctx context.Context) error {
	if err := l.load(ctx); err != nil {
		l.log.Error(err, "not restoring the cost ledger; the cost page counts from now")
	}
	tick := l.clock.NewTicker(ledgerPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			l.save(final)
			return nil
		case <-tick.C():
			if l.ledger.Changed() {
				l.save(ctx)
			}
		}
	}
}

// load reads the stored ledger, if there is one. It lists rather than gets: muster's
// permissions on ConfigMaps are list, create and update.
func (l *ledgerStore) load(ctx context.Context) error {
	list, err := l.kube.CoreV1().ConfigMaps(l.namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", dashboard.LedgerConfigMap).String()})
	if err != nil {
		return fmt.Errorf("listing ConfigMap %s/%s: %w", l.namespace, dashboard.LedgerConfigMap, err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	l.stored = list.Items[0].DeepCopy()
	return l.ledger.Restore([]byte(l.stored.Data[dashboard.LedgerKey]), l.clock.Now())
}

// save writes the ledger; a failure is logged and the next tick tries again.
func (l *ledgerStore) save(ctx context.Context) {
	data, err := l.ledger.Encode()
	if err != nil {
		l.log.Error(err, "not writing the cost ledger")
		return
	}
	cms := l.kube.CoreV1().ConfigMaps(l.namespace)
	if l.stored == nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: dashboard.LedgerConfigMap, Namespace: l.namespace}}
		cm.Data = map[string]string{dashboard.LedgerKey: string(data)}
		l.stored, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		cm := l.stored.DeepCopy()
		cm.Data = map[string]string{dashboard.LedgerKey: string(data)}
		l.stored, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		// Read again on the next write: someone else wrote or deleted it.
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			_ = l.reread(ctx)
		} else {
			l.stored = nil
		}
		l.log.Error(err, "writing the cost ledger", "configMap", l.namespace+"/"+dashboard.LedgerConfigMap)
	}
}

// reread finds the stored ConfigMap again after a conflict, keeping this ledger's
// counts (the leader's are the newest).
func (l *ledgerStore) reread(ctx context.Context) error {
	list, err := l.kube.CoreV1().ConfigMaps(l.namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", dashboard.LedgerConfigMap).String()})
	if err != nil {
		l.stored = nil
		return err
	}
	l.stored = nil
	if len(list.Items) > 0 {
		l.stored = list.Items[0].DeepCopy()
	}
	return nil
}
