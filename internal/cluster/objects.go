package cluster

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Objects are the cluster objects besides nodes and pods that kube-scheduler's filters
// read: namespaces (for pod affinity's namespace selectors), and the volume objects
// (claims, volumes, classes, the CSI drivers and their per-node limits). A snapshot and
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

	generation uint64
}

// Generation changes with every change of the objects.
func (st *Objects) Generation() uint64 { return st.generation }

// Objects returns the snapshot's cluster objects besides nodes and pods.
func (s *Snapshot) Objects() *Objects { return s.storage }

// SetObject adds or replaces one object: a Namespace, PersistentVolumeClaim,
// PersistentVolume, StorageClass, CSINode or CSIDriver. Other objects are ignored and
// reported false.
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
	default:
		return false
	}
	st.generation++
	return true
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
