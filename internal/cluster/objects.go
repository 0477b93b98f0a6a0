package cluster

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Objects are the cluster objects besides nodes and pods that kube-scheduler's filters
// read: namespaces (for pod affinity's namespace selectors), the volume objects (claims,
// volumes, classes, the CSI drivers and their per-node limits) and the DRA objects
// (ResourceClaims, ResourceSlices, DeviceClasses, DeviceTaintRules). A snapshot and
// its copies share one Objects; the engine changes it between decisions, never during one.
type Objects struct {
	// Namespaces are Namespace objects by name.
	Namespaces map[string]*corev1.Namespace
	// Claims are PersistentVolumeClaims by namespace/name.
	Claims map[string]*corev1.PersistentVolumeClaim
	// Volumes are PersistentVolumes by name.
	Volumes map[string]*corev1.PersistentVolume
	// Classes are StorageClasses by name.
	Classes map[string]*storagev1.StorageClass
	// CSINodes are CSINode objects by node name.
	CSINodes map[string]*storagev1.CSINode
	// Drivers are CSIDriver objects by name.
	Drivers map[string]*storagev1.CSIDriver
	// ResourceClaims are DRA ResourceClaims by namespace/name, as allocated: a claim the
	// engine allocated in a plan not yet observed is shown with its allocation (see
	// AssumeClaim).
	ResourceClaims map[string]*resourcev1.ResourceClaim
	// Slices are ResourceSlices by name.
	Slices map[string]*resourcev1.ResourceSlice
	// DeviceClasses are DeviceClasses by name.
	DeviceClasses map[string]*resourcev1.DeviceClass
	// DeviceTaintRules are DeviceTaintRules by name: taints an administrator puts on
	// devices, which the allocator honours as it honours those of the slices.
	DeviceTaintRules map[string]*resourcev1.DeviceTaintRule

	// observed are the claims as last observed, under an assumed allocation.
	observed map[string]*resourcev1.ResourceClaim
	// empty is the objects as an empty cluster shows them, made at emptyGeneration.
	empty           *Objects
	emptyGeneration uint64

	generation uint64
	// devices counts the changes of ResourceSlices, DeviceClasses and DeviceTaintRules.
	devices uint64
	// ofDevices and ofObjects hold what other packages derived from the objects (see
	// OfDevices and OfObjects).
	ofDevices, ofObjects map[string]memo
}

// Generation changes with every change of the objects.
func (st *Objects) Generation() uint64 { return st.generation }

// DevicesGeneration changes with every change of the ResourceSlices, DeviceClasses and
// DeviceTaintRules: what devices each node has, which are tainted, and which classes
// select them.
func (st *Objects) DevicesGeneration() uint64 { return st.devices }

// Objects returns the snapshot's cluster objects besides nodes and pods.
func (s *Snapshot) Objects() *Objects { return s.storage }

// SetObject adds or replaces one object: a Namespace, PersistentVolumeClaim,
// PersistentVolume, StorageClass, CSINode, CSIDriver, ResourceClaim, ResourceSlice,
// DeviceClass or DeviceTaintRule. Other objects are ignored and reported false.
func (s *Snapshot) SetObject(obj any) bool {
	st := s.storage
	switch o := obj.(type) {
	case *corev1.Namespace:
		st.Namespaces = put(st.Namespaces, o.Name, o)
	case *corev1.PersistentVolumeClaim:
		st.Claims = put(st.Claims, o.Namespace+"/"+o.Name, o)
	case *corev1.PersistentVolume:
		st.Volumes = put(st.Volumes, o.Name, o)
	case *storagev1.StorageClass:
		st.Classes = put(st.Classes, o.Name, o)
	case *storagev1.CSINode:
		st.CSINodes = put(st.CSINodes, o.Name, o)
	case *storagev1.CSIDriver:
		st.Drivers = put(st.Drivers, o.Name, o)
	case *resourcev1.ResourceClaim:
		st.setClaim(o)
	case *resourcev1.ResourceSlice:
		st.Slices = put(st.Slices, o.Name, o)
		st.devices++
	case *resourcev1.DeviceClass:
		st.DeviceClasses = put(st.DeviceClasses, o.Name, o)
		st.devices++
	case *resourcev1.DeviceTaintRule:
		st.DeviceTaintRules = put(st.DeviceTaintRules, o.Name, o)
		st.devices++
	default:
		return false
	}
	st.generation++
	return true
}

// setClaim records an observed claim. Under an assumed allocation (AssumeClaim) an
// observed claim without one is kept aside: the allocation is being written, and its
// devices stay taken until it is observed or forgotten (ForgetClaim). A claim for a
// pod's extended resources backed by DRA is assumed before it exists: the one observed
// under its name, created by the binder, has another UID.
func (st *Objects) setClaim(c *resourcev1.ResourceClaim) {
	key := c.Namespace + "/" + c.Name
	if _, ok := st.observed[key]; ok {
		if cur := st.ResourceClaims[key]; cur != nil && (c.UID == cur.UID || extendedClaim(c) && extendedClaim(cur)) && c.Status.Allocation == nil {
			st.observed[key] = c
			return
		}
		delete(st.observed, key)
	}
	st.ResourceClaims = put(st.ResourceClaims, key, c)
}

// AssumeClaim shows claim, a copy of an observed claim with the allocation and
// reservations a plan writes, in place of the claim shown now, until the claim is
// observed allocated or removed, or undo is called. Undos run in reverse order.
func (s *Snapshot) AssumeClaim(claim *resourcev1.ResourceClaim) (undo func()) {
	st := s.storage
	key := claim.Namespace + "/" + claim.Name
	prev := st.ResourceClaims[key]
	_, under := st.observed[key]
	if !under {
		st.observed = put(st.observed, key, prev)
	}
	st.ResourceClaims = put(st.ResourceClaims, key, claim)
	st.generation++
	return func() {
		if st.ResourceClaims[key] != claim {
			return // observed since, or removed
		}
		if !under {
			// The claim as last observed, which may be newer than prev.
			prev = st.observed[key]
			delete(st.observed, key)
		}
		if prev == nil {
			delete(st.ResourceClaims, key)
		} else {
			st.ResourceClaims[key] = prev
		}
		st.generation++
	}
}

// ForgetClaim drops every assumed allocation of the claim namespace/name: the claim is
// shown as last observed.
func (s *Snapshot) ForgetClaim(key string) {
	st := s.storage
	observed, ok := st.observed[key]
	if !ok {
		return
	}
	delete(st.observed, key)
	if observed == nil {
		delete(st.ResourceClaims, key)
	} else {
		st.ResourceClaims[key] = observed
	}
	st.generation++
}

// ResourceClaim returns the claim namespace/name as the snapshot shows it.
func (s *Snapshot) ResourceClaim(key string) *resourcev1.ResourceClaim {
	return s.storage.ResourceClaims[key]
}

// RemoveObject forgets one object, given as SetObject takes it (only
// its kind, namespace and name are read).
func (s *Snapshot) RemoveObject(obj any) {
	st := s.storage
	switch o := obj.(type) {
	case *corev1.Namespace:
		delete(st.Namespaces, o.Name)
	case *corev1.PersistentVolumeClaim:
		delete(st.Claims, o.Namespace+"/"+o.Name)
	case *corev1.PersistentVolume:
		delete(st.Volumes, o.Name)
	case *storagev1.StorageClass:
		delete(st.Classes, o.Name)
	case *storagev1.CSINode:
		delete(st.CSINodes, o.Name)
	case *storagev1.CSIDriver:
		delete(st.Drivers, o.Name)
	case *resourcev1.ResourceClaim:
		delete(st.ResourceClaims, o.Namespace+"/"+o.Name)
		delete(st.observed, o.Namespace+"/"+o.Name)
	case *resourcev1.ResourceSlice:
		delete(st.Slices, o.Name)
		st.devices++
	case *resourcev1.DeviceClass:
		delete(st.DeviceClasses, o.Name)
		st.devices++
	case *resourcev1.DeviceTaintRule:
		delete(st.DeviceTaintRules, o.Name)
		st.devices++
	default:
		return
	}
	st.generation++
}

func put[T any](m map[string]T, key string, v T) map[string]T {
	if m == nil {
		m = map[string]T{}
	}
	m[key] = v
	return m
}

// unallocated is st as an empty, healthy cluster shows it: every ResourceClaim without
// its allocation and reservations, so that devices in use count as free, and no device
// tainted (no DeviceTaintRules, slices without their devices' taints): taints mark
// devices unhealthy or under maintenance, for a while, and a group that needs them
// waits rather than being Impossible. It shares everything else with st, and is kept
// until st changes.
func (st *Objects) unallocated() *Objects {
	if st.empty != nil && st.emptyGeneration == st.generation {
		return st.empty
	}
	cp := *st
	cp.observed, cp.empty, cp.DeviceTaintRules = nil, nil, nil
	var tainted bool
	cp.Slices, tainted = untainted(st.Slices)
	// What was derived from the devices holds for the copy when no device is tainted;
	// nothing derived from the claims does.
	cp.ofDevices, cp.ofObjects = nil, nil
	if !tainted && len(st.DeviceTaintRules) == 0 {
		cp.ofDevices = maps.Clone(st.ofDevices)
	}
	cp.ResourceClaims = make(map[string]*resourcev1.ResourceClaim, len(st.ResourceClaims))
	for key, c := range st.ResourceClaims {
		if c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 {
			free := *c
			free.Status = resourcev1.ResourceClaimStatus{}
			c = &free
		}
		cp.ResourceClaims[key] = c
	}
	st.empty, st.emptyGeneration = &cp, st.generation
	return st.empty
}

// untainted returns all with their devices' taints removed: the same map when no
// device has any, else (tainted) a new one whose tainted slices are copies.
func untainted(all map[string]*resourcev1.ResourceSlice) (_ map[string]*resourcev1.ResourceSlice, tainted bool) {
	var out map[string]*resourcev1.ResourceSlice
	for name, s := range all {
		if !slices.ContainsFunc(s.Spec.Devices, func(d resourcev1.Device) bool { return len(d.Taints) > 0 }) {
			continue
		}
		if out == nil {
			out = maps.Clone(all)
		}
		cp := s.DeepCopy()
		for i := range cp.Spec.Devices {
			cp.Spec.Devices[i].Taints = nil
		}
		out[name] = cp
	}
	if out == nil {
		return all, false
	}
	return out, true
}

// extendedClaim reports whether c is a claim for a pod's extended resources backed by
// DRA (annotation resource.kubernetes.io/extended-resource-claim).
func extendedClaim(c *resourcev1.ResourceClaim) bool {
	return c.Annotations[resourcev1.ExtendedResourceClaimAnnotation] == "true"
}
