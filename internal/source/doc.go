// Package source translates the group APIs muster accepts (DESIGN §2) into engine.GroupSpec,
// and checks a group's members against it. It is a pure translation layer: functions from
// Kubernetes objects to specs, with every problem recorded in GroupSpec.Invalid as
// "FIELD: VALUE: what was expected". It makes no client calls and reads no clock; the
// controller lists the objects and calls it.
//
// # Registry
//
// GroupAPIs is the one list of the group object APIs: per API its resource, its object,
// its translation in (GroupAPI.Translate) and where a group's status goes out
// (GroupAPI.StatusOut: an annotation, status in the main resource, or the status
// subresource) and is read back (GroupAPI.Conditions). OwnerKinds is the one list of the
// workload kinds whose declared replicas and failure muster reads (OwnerRoles,
// OwnerFailure), with the name `muster explain` accepts for each and the API versions
// understood; the version a cluster serves is resolved through discovery by the caller.
// The controller's watches, explain, the CLI and deploy/rbac (checked by a test) follow
// these lists.
//
// # Membership
//
// GroupOf says which group a pod belongs to. When a pod names several, the first of these
// wins: pod.spec.schedulingGroup.podGroupName (Native), the label
// scheduling.x-k8s.io/pod-group (Coscheduling), the annotation scheduling.k8s.io/group-name
// (Volcano), the label muster.dev/group (Labels). A pod naming none is a Single group of
// its own. Groups are keyed SOURCE/namespace/name, so two APIs' objects of one name never
// merge.
//
// # What each API carries
//
// scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1): spec.minMember is MinMember and
// spec.minResources is MinResources. spec.scheduleTimeoutSeconds becomes Policy.StartTimeout:
// Coscheduling uses it as the limit on waiting for the whole group, at its Permit stage.
// muster has no Permit wait (a group is admitted with its complete placement), so the wait it
// bounds is the one that follows admission: until minMember members are Ready. The API
// carries no priority; the group's priority is its members' highest.
//
// Volcano PodGroup (scheduling.volcano.sh/v1beta1): spec.minMember, spec.minResources, and
// spec.queue, where Volcano's "default" queue means muster's configured default (Queue "") and
// any other value must be a Queue name.
// spec.priorityClassName is resolved to Priority; an unknown class makes the group Invalid.
// A hard spec.networkTopology (HyperNode tiers, which muster does not model) makes the group
// Invalid unless muster.dev/topology names a label key to use instead; a soft one is a
// preference muster leaves to its packing. spec.minTaskMember is TaskMinimums (members
// name their task in the annotation volcano.sh/task-spec) while the minimums' sum is at
// most minMember, as Volcano enforces them; a negative one makes the group Invalid.
//
// Native PodGroup (scheduling.k8s.io/v1beta1): spec.schedulingPolicy.gang.minCount is
// MinMember; the spec.schedulingConstraints.topology key (one, a node label key) is
// Topology.Required;
// spec.priority, or else spec.priorityClassName through the resolver, is Priority. A basic
// policy means no gang: FromNative returns MinMember 1, and the controller should schedule
// each member pod on its own, as a group of one carrying the PodGroup's queue, priority and
// policy, never waiting for its siblings (see IsBasic).
//
// Plain pods (label muster.dev/group): the annotation muster.dev/min-member on the member
// pods is MinMember. It is required, and the pods that carry it must agree.
//
// # Per-group annotations
//
// muster.dev/queue, start-timeout, recovery-timeout, max-retries, backoff-base, backoff-max,
// topology and topology-preferred are read from the group object, or from the member pods
// for Labels and Single groups (where every pod that carries one must give the same value).
// An annotation overrides the API field it duplicates: muster.dev/queue overrides Volcano's
// spec.queue, muster.dev/start-timeout overrides spec.scheduleTimeoutSeconds, and
// muster.dev/topology overrides the Native topology constraint and Volcano's
// networkTopology. A malformed value makes the group Invalid, naming the annotation and
// the value.
package source
