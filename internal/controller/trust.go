package controller

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// What a tenant may write, muster must not trust (docs/reliability.md). Two things
// muster reads back for recovery are checked before it acts on them:
//
//   - the records of the pods it will create again, ConfigMaps that live only in
//     muster's own namespace, each signed;
//   - the plans on bound pods (the muster.dev/placement annotation), each signed and
//     checked against the pod that carries it.
//
// The signatures are HMAC-SHA256 with a key that muster creates, once, in the Secret
// SigningKeySecret of its namespace; only muster (and the cluster's administrators)
// can read it.

// SigningKeySecret is the Secret, in muster's namespace, that holds the key signing
// muster's records and plans.
const SigningKeySecret = "muster-signing-key"

// signingKeyField is the field of SigningKeySecret's data that holds the key.
const signingKeyField = "key"

// signingKeyBytes is the length of the key muster creates, and the shortest it accepts.
const signingKeyBytes = 32

// The kinds of what muster reads back and verifies, as the kind label of
// muster_untrusted_records_total.
const (
	KindRecord = "record"
	KindPlan   = "plan"
)

// ReasonUntrustedRecord is the reason of the Event on a record or a plan that failed
// verification and was ignored.
const ReasonUntrustedRecord = "UntrustedRecord"

// The reasons a record or a plan fails verification, as the reason label of
// muster_untrusted_records_total.
const (
	UntrustedUnsigned     = "Unsigned"
	UntrustedBadSignature = "BadSignature"
	UntrustedMalformed    = "Malformed"
	UntrustedWrongName    = "WrongName"
	UntrustedNotOurs      = "NotOurs"
	UntrustedNodeNameSet  = "NodeNameSet"
	UntrustedWrongCarrier = "WrongCarrier"
)

// untrusted is why a record or a plan was not trusted: one of the Untrusted reasons,
// and a message naming the field and the value.
type untrusted struct {
	reason, message string
}

func (u *untrusted) Error() string { return u.reason + ": " + u.message }

// signer signs and verifies muster's records and plans.
type signer struct {
	key []byte
}

// sign returns the signature of the parts, in order, for the purpose what.
func (g signer) sign(what string, parts ...string) string {
	mac := hmac.New(sha256.New, g.key)
	mac.Write([]byte(what))
	for _, p := range parts {
		// Each part is preceded by its length, so that no two lists of parts sign alike.
		fmt.Fprintf(mac, "\x00%d:", len(p))
		mac.Write([]byte(p))
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// verify reports whether sig is the signature of the parts.
func (g signer) verify(sig, what string, parts ...string) bool {
	want := g.sign(what, parts...)
	return hmac.Equal([]byte(sig), []byte(want))
}

// loadSigningKey reads the signing key from the Secret in namespace ns, creating the
// Secret with a fresh random key when there is none. Two replicas starting at once
// create it once: the one that loses the race reads the winner's.
func loadSigningKey(ctx context.Context, kube kubernetes.Interface, ns string) (signer, error) {
	secrets := kube.CoreV1().Secrets(ns)
	for range 2 {
		s, err := secrets.Get(ctx, SigningKeySecret, metav1.GetOptions{})
		if err == nil {
			key := s.Data[signingKeyField]
			if len(key) < signingKeyBytes {
				return signer{}, fmt.Errorf("secret %s/%s: data.%s: expected a key of at least %d bytes, found %d",
					ns, SigningKeySecret, signingKeyField, signingKeyBytes, len(key))
			}
			return signer{key: key}, nil
		}
		if !apierrors.IsNotFound(err) {
			return signer{}, fmt.Errorf("reading the signing key, secret %s/%s: %w", ns, SigningKeySecret, err)
		}
		key := make([]byte, signingKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return signer{}, fmt.Errorf("generating a signing key: %w", err)
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: SigningKeySecret, Namespace: ns},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{signingKeyField: key},
		}
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			if err := ensureOwnNamespace(ctx, kube, ns); err != nil {
				return signer{}, err
			}
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		}
		if err == nil {
			return signer{key: key}, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return signer{}, fmt.Errorf("creating the signing key, secret %s/%s: %w", ns, SigningKeySecret, err)
		}
	}
	return signer{}, errors.New("reading the signing key: the secret was created and deleted while muster read it")
}

// ensureOwnNamespace creates muster's namespace when it does not exist, as on a
// sandbox, where muster runs with an administrator's client. deploy/ creates the
// namespace, and muster's ServiceAccount may not create one: it then gets an error
// naming the namespace and the field that names it.
func ensureOwnNamespace(ctx context.Context, kube kubernetes.Interface, ns string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s (the Configuration's namespace) does not exist and muster cannot create it: %w", ns, err)
	}
	return nil
}

// signRecord returns the signature of a record: its ConfigMap's name, the pod it
// records and the UID of the pod it replaces.
func (g signer) signRecord(name, pod, uid string) string {
	return g.sign(KindRecord, name, pod, uid)
}

// verifyRecord checks a recreate record before muster acts on it: it is signed by
// muster, names the pod it records, and records a pod of muster's (one of
// schedulerNames) that is bound to no node. It returns the pod.
func (g signer) verifyRecord(cm *corev1.ConfigMap, schedulerNames []string) (*corev1.Pod, *untrusted) {
	raw, uid, sig := cm.Data[recordPodKey], cm.Data[recordUIDKey], cm.Data[recordSignatureKey]
	if sig == "" {
		return nil, &untrusted{UntrustedUnsigned, fmt.Sprintf("data.%s: expected a signature, found none", recordSignatureKey)}
	}
	if !g.verify(sig, KindRecord, cm.Name, raw, uid) {
		return nil, &untrusted{UntrustedBadSignature, fmt.Sprintf("data.%s: %q is not muster's signature of the record", recordSignatureKey, sig)}
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal([]byte(raw), p); err != nil {
		return nil, &untrusted{UntrustedMalformed, fmt.Sprintf("data.%s: %v", recordPodKey, err)}
	}
	if want := recordName(p.Namespace, p.Name); cm.Name != want {
		return nil, &untrusted{UntrustedWrongName, fmt.Sprintf("metadata.name: %q: the record of pod %s/%s is named %q", cm.Name, p.Namespace, p.Name, want)}
	}
	if !slices.Contains(schedulerNames, p.Spec.SchedulerName) {
		return nil, &untrusted{UntrustedNotOurs, fmt.Sprintf("data.%s: spec.schedulerName: %q: expected %s",
			recordPodKey, p.Spec.SchedulerName, source.ExpectedSchedulerNames(schedulerNames))}
	}
	if p.Spec.NodeName != "" {
		return nil, &untrusted{UntrustedNodeNameSet, fmt.Sprintf("data.%s: spec.nodeName: %q: expected none", recordPodKey, p.Spec.NodeName)}
	}
	return p, nil
}

// planSources are the sources of the groups muster writes plans for.
var planSources = map[engine.Source]bool{
	engine.Coscheduling: true, engine.Volcano: true, engine.Native: true, engine.Labels: true, engine.Single: true,
}

// signPlan sets plan's signature, over the plan's content.
func (g signer) signPlan(plan *Plan) error {
	plan.Signature = ""
	data, err := json.Marshal(plan)
	if err != nil {
		return fmt.Errorf("encoding the plan of %s: %w", plan.Group, err)
	}
	plan.Signature = g.sign(KindPlan, string(data))
	return nil
}

// verifyPlan decodes the plan that carrier bears and checks it before muster acts on
// it: signed by muster, for a group of carrier's own namespace, and made for carrier
// itself (its UID, on the node it is bound to). A tenant who copies a plan onto a pod
// of theirs, or writes one, gets it ignored.
func (g signer) verifyPlan(carrier *corev1.Pod, raw string) (*Plan, *untrusted) {
	plan, err := decodePlan(raw)
	if err != nil {
		return nil, &untrusted{UntrustedMalformed, err.Error()}
	}
	sig := plan.Signature
	if sig == "" {
		return nil, &untrusted{UntrustedUnsigned, "signature: expected muster's signature, found none"}
	}
	plan.Signature = ""
	data, err := json.Marshal(plan)
	if err != nil || !g.verify(sig, KindPlan, string(data)) {
		return nil, &untrusted{UntrustedBadSignature, fmt.Sprintf("signature: %q is not muster's signature of the plan", sig)}
	}
	plan.Signature = sig
	ref := refOfKey(plan.Group)
	if ref.Namespace != carrier.Namespace || !planSources[ref.Source] {
		return nil, &untrusted{UntrustedWrongCarrier, fmt.Sprintf("group: %q: a pod of namespace %s carries only plans of its namespace's groups", plan.Group, carrier.Namespace)}
	}
	a, ok := plan.Pods[carrier.Name]
	switch {
	case !ok:
		return nil, &untrusted{UntrustedWrongCarrier, fmt.Sprintf("pods: the plan does not place its carrier %s", carrier.Name)}
	case a.UID != carrier.UID:
		return nil, &untrusted{UntrustedWrongCarrier, fmt.Sprintf("pods.%s.uid: %q: expected the carrier's, %q", carrier.Name, a.UID, carrier.UID)}
	case a.Node != carrier.Spec.NodeName:
		return nil, &untrusted{UntrustedWrongCarrier, fmt.Sprintf("pods.%s.node: %q: the carrier is bound to %q", carrier.Name, a.Node, carrier.Spec.NodeName)}
	}
	return plan, nil
}

// untrusted ignores a record or a plan that failed verification: an UntrustedRecord
// Event on the object that holds it, a log line and a count in
// muster_untrusted_records_total.
func (k *kit) untrusted(holder client.Object, kind string, why *untrusted) {
	k.log.Info("ignoring a "+kind+" that failed verification", "object", holder.GetNamespace()+"/"+holder.GetName(),
		"reason", why.reason, "detail", why.message)
	k.metrics.Untrusted.WithLabelValues(kind, why.reason).Inc()
	k.event(holder, corev1.EventTypeWarning, ReasonUntrustedRecord,
		fmt.Sprintf("muster ignored the %s on this object (%s): %s", kind, why.reason, why.message))
}
