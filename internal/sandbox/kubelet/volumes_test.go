package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// volumeWorld is the claims and volumes the kubelet's listers see in a test.
type volumeWorld struct {
	claims  []*v1.PersistentVolumeClaim
	volumes []*v1.PersistentVolume
}

// kubelet returns a Kubelet whose claim and volume listers serve w.
func (w volumeWorld) kubelet(t *testing.T) *Kubelet {
	t.Helper()
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range w.claims {
		if err := claims.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, pv := range w.volumes {
		if err := volumes.Add(pv); err != nil {
			t.Fatal(err)
		}
	}
	return &Kubelet{claims: corelisters.NewPersistentVolumeClaimLister(claims), volumes: corelisters.NewPersistentVolumeLister(volumes)}
}

func boundClaim(name, volume, uid string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + uid)},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: volume},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
}

func volumeOn(name string, claim *v1.PersistentVolumeClaim, host string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if claim != nil {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
	}
	if host != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{host}}},
		}}}}
	}
	return pv
}

func TestUnmountable(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1.LabelHostname: "n1"}}}
	pod := testPod(false, nil)
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}}}
	ephemeralPod := testPod(false, nil)
	ephemeralPod.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}

	data := boundClaim("data", "pv-1", "1")
	unbound := data.DeepCopy()
	unbound.Status.Phase, unbound.Spec.VolumeName = v1.ClaimPending, ""
	other := boundClaim("other", "pv-1", "2")
	squatted := boundClaim("p-cache", "pv-2", "3") // named as p's ephemeral claim, not owned by p
	owned := squatted.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: ephemeralPod.UID, Controller: ptr.To(true)}}

	const prefix = "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC ns/data: "
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		world volumeWorld
		want  string
	}{
		{"bound to a volume on the node", pod, volumeWorld{[]*v1.PersistentVolumeClaim{data}, []*v1.PersistentVolume{volumeOn("pv-1", data, "n1")}}, ""},
		{"bound to a volume anywhere", pod, volumeWorld{[]*v1.PersistentVolumeClaim{data}, []*v1.PersistentVolume{volumeOn("pv-1", data, "")}}, ""},
		{"no claim", pod, volumeWorld{}, prefix + `failed to fetch PVC from API server: persistentvolumeclaim "data" not found`},
		{"unbound", pod, volumeWorld{[]*v1.PersistentVolumeClaim{unbound}, nil}, prefix + "PVC is not bound"},
		{"volume missing", pod, volumeWorld{[]*v1.PersistentVolumeClaim{data}, nil},
			prefix + `failed to fetch PV pv-1 from API server: persistentvolume "pv-1" not found`},
		{"volume bound to another claim", pod, volumeWorld{[]*v1.PersistentVolumeClaim{data}, []*v1.PersistentVolume{volumeOn("pv-1", other, "n1")}},
			prefix + "PV pv-1 is not bound to claim ns/data (claimRef ns/other uid claim-2)"},
		{"volume on another node", pod, volumeWorld{[]*v1.PersistentVolumeClaim{data}, []*v1.PersistentVolume{volumeOn("pv-1", data, "n2")}},
			prefix + "PV pv-1 has node affinity that excludes node n1: no matching NodeSelectorTerms"},
		{"ephemeral claim of another", ephemeralPod, volumeWorld{[]*v1.PersistentVolumeClaim{squatted}, []*v1.PersistentVolume{volumeOn("pv-2", squatted, "")}},
			"Unable to attach or mount volumes: unmounted volumes=[cache], unattached volumes=[], failed to process volumes=[cache]: " +
				"error processing PVC ns/p-cache: PVC ns/p-cache was not created for pod ns/p (pod is not owner)"},
		{"ephemeral claim of its own", ephemeralPod, volumeWorld{[]*v1.PersistentVolumeClaim{owned}, []*v1.PersistentVolume{volumeOn("pv-2", owned, "")}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.world.kubelet(t).unmountable(tc.pod, node); got != tc.want {
				t.Errorf("expected %q, found %q", tc.want, got)
			}
		})
	}
}
