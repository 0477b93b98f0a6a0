package v1alpha1

// Keys by which workloads talk to muster (DESIGN §2). Per-group settings are read from
// the group object's annotations, or from the member pods' annotations for plain groups
// that have no group object; each overrides the queue's defaults, which override the
// configuration file's groupDefaults.
const (
	// QueueAnnotation names the Queue a group is admitted through. Without it, a group
	// falls into the queue whose namespaceSelector matches its namespace, and failing
	// that into the configuration's defaultQueue. Volcano's spec.queue is honoured
	// when this annotation is absent.
	QueueAnnotation = "muster.dev/queue"

	// StartTimeoutAnnotation is how long a bound group may take to have minMember
	// members Ready (or Succeeded) before muster evicts it and retries, as a Go
	// duration string such as "5m". The coscheduling PodGroup's
	// spec.scheduleTimeoutSeconds is honoured when this annotation is absent.
	StartTimeoutAnnotation = "muster.dev/start-timeout"

	// RecoveryTimeoutAnnotation is how long a running group that lost members may
	// stay below minMember before the whole group is evicted and requeued, as a Go
	// duration string.
	RecoveryTimeoutAnnotation = "muster.dev/recovery-timeout"

	// MaxRetriesAnnotation is how many times a group is evicted and requeued after a
	// failed start or recovery before it is marked Failed, as a decimal integer >= 0.
	MaxRetriesAnnotation = "muster.dev/max-retries"

	// BackoffBaseAnnotation is the first delay before a failed group is queued
	// again, as a Go duration string; each later retry doubles it, up to the
	// BackoffMaxAnnotation value.
	BackoffBaseAnnotation = "muster.dev/backoff-base"

	// BackoffMaxAnnotation caps the exponential requeue delay, as a Go duration
	// string.
	BackoffMaxAnnotation = "muster.dev/backoff-max"

	// TopologyAnnotation is a node label key, such as "topology.kubernetes.io/zone",
	// whose value must be the same on every node the group is placed on.
	TopologyAnnotation = "muster.dev/topology"

	// TopologyPreferredAnnotation is a node label key over whose values the group
	// should be spread as little as possible; unlike TopologyAnnotation it never
	// makes a group unplaceable.
	TopologyPreferredAnnotation = "muster.dev/topology-preferred"

	// GroupLabel is the pod label that makes pods with no group object members of
	// the plain group it names, within the pod's namespace.
	GroupLabel = "muster.dev/group"

	// MinMemberAnnotation is the pod annotation giving a plain group's minimum
	// member count, as a decimal integer >= 1. A plain group whose pods lack it is
	// invalid: muster reports the missing annotation rather than guess a minimum.
	MinMemberAnnotation = "muster.dev/min-member"

	// PlacementAnnotation carries a group's placement plan on the Bindings muster
	// makes, and so on the pods they bind (the API server copies a Binding's
	// annotations onto the pod): on every member of a small group, and on the first
	// member bound, before the others, of a large one. A restarted or newly elected
	// muster completes or undoes a plan it finds partly bound. It stays as the record
	// of the pod's placement.
	PlacementAnnotation = "muster.dev/placement"
)

// Keys of the foreign group APIs that muster reads (DESIGN §2).
const (
	// CoschedulingPodGroupLabel is the pod label naming the scheduler-plugins
	// coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1) the pod belongs to. The
	// Kubeflow training-operator, Trainer v2 and mpi-operator set it.
	CoschedulingPodGroupLabel = "scheduling.x-k8s.io/pod-group"

	// VolcanoGroupNameAnnotation is the pod annotation naming the Volcano PodGroup
	// (scheduling.volcano.sh/v1beta1) the pod belongs to.
	VolcanoGroupNameAnnotation = "scheduling.k8s.io/group-name"
)

// StoppedAnnotation, set to "true" on a group object (or on the member pods of a group
// that has none) by a user (`kubectl muster stop`), stops the group: muster evicts every
// member it holds and keeps it out of the queue, in phase Stopped, until the annotation
// is removed or set to "false" (`kubectl muster resume`). Any other value is refused
// by deploy/policies and otherwise read as "false".
const StoppedAnnotation = "muster.dev/stopped"

// SuspendedAnnotation marks a batch Job that muster suspended to evict its group; its
// value is the eviction's reason (StartTimeout, Preempted, ...). muster resumes the Job,
// and removes the annotation, when the group's backoff ends; it leaves a Job whose group
// Failed suspended. The Job also carries the group's LifecycleAnnotation.
const SuspendedAnnotation = "muster.dev/suspended"

// LifecycleAnnotation is written by muster on the group object (on the
// lowest-named member pod for plain groups): the group's lifecycle as JSON
// (GroupLifecycle), so that `muster explain` can say when the next timeout fires and
// what happens then.
const LifecycleAnnotation = "muster.dev/lifecycle"
