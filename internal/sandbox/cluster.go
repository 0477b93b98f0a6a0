package sandbox

import (
	"cmp"
	"fmt"
	"os"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Node labels the simulated cluster sets.
const (
	// LabelPool names the node pool a node was made from.
	LabelPool = "sandbox.muster.dev/pool"
	// LabelRack is the rack a node is in, for pools with racks.
	LabelRack = "muster.dev/rack"
	// LabelGPUProduct is the accelerator model, as NVIDIA's GPU feature discovery
	// labels real nodes.
	LabelGPUProduct = "nvidia.com/gpu.product"
	// ResourceGPU is the extended resource of NVIDIA GPUs.
	ResourceGPU v1.ResourceName = "nvidia.com/gpu"
)

// Cluster is the simulated cluster: the node pools whose nodes the sandbox creates.
// It is what a cluster file holds, in YAML:
//
//	pools:
//	- name: a100
//	  count: 16
//	  cpu: "64"
//	  memory: 512Gi
//	  gpus: 8
//	  gpuProduct: NVIDIA-A100-SXM4-80GB
//	  racks: 4
//	  labels: {team: ml}
//	  taints: [{key: gpu, value: a100, effect: NoSchedule}]
//	- name: h100
//	  count: 8
//	  cpu: "128"
//	  memory: 1Ti
//	  draGPUs: 8
//	  clique: clique-a
type Cluster struct {
	// Pools are the node pools, created in order.
	Pools []NodePool `json:"pools"`
}

// NodePool is a number of identical nodes named Name-0 … Name-(Count-1).
type NodePool struct {
	// Name prefixes the names of the pool's nodes; a DNS-1123 label.
	Name string `json:"name"`
	// Count is the number of nodes, at least 1.
	Count int `json:"count"`
	// CPU is each node's allocatable CPU, a quantity such as "64" or "3500m".
	CPU string `json:"cpu"`
	// Memory is each node's allocatable memory, a quantity such as "512Gi".
	Memory string `json:"memory"`
	// Pods is the most pods each node runs; 0 means 110, the kubelet default.
	Pods int `json:"pods,omitempty"`
	// GPUs is each node's nvidia.com/gpu; 0 means no GPUs.
	GPUs int `json:"gpus,omitempty"`
	// GPUProduct, if set, labels each node nvidia.com/gpu.product.
	GPUProduct string `json:"gpuProduct,omitempty"`
	// DRAGPUs is each node's number of GPUs exposed as DRA devices of the sandbox's
	// driver (DRADriver: one ResourceSlice per node, a device gpu-<i> per GPU), at most
	// 128; 0 means none. A pool has GPUs or DRAGPUs, not both: a GPU is an extended
	// resource or a device.
	DRAGPUs int `json:"draGPUs,omitempty"`
	// DRAProduct is the productName attribute of the DRA GPUs; empty means
	// DefaultDRAProduct. At most 64 characters.
	DRAProduct string `json:"draProduct,omitempty"`
	// DRAMemory is the memory capacity of each DRA GPU, a quantity; empty means
	// DefaultDRAMemory.
	DRAMemory string `json:"draMemory,omitempty"`
	// Clique is the NVLink domain of the pool's nodes: their label
	// nvidia.com/gpu.clique and the cliqueID attribute of their DRA GPUs. It needs
	// DRAGPUs.
	Clique string `json:"clique,omitempty"`
	// Racks, if set, spreads the nodes in contiguous blocks over that many racks,
	// labelled muster.dev/rack=<name>-rack-<i>.
	Racks int `json:"racks,omitempty"`
	// Zones, if set, spreads the nodes in contiguous blocks over that many zones,
	// labelled topology.kubernetes.io/zone=<name>-zone-<i>.
	Zones int `json:"zones,omitempty"`
	// Labels are added to each node.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are put on each node.
	Taints []v1.Taint `json:"taints,omitempty"`
}

// defaultMaxPods is the kubelet's default --max-pods.
const defaultMaxPods = 110

// LoadCluster reads and validates a cluster file. Unknown fields and malformed
// values are errors naming the field and the value.
func LoadCluster(path string) (Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Cluster{}, fmt.Errorf("reading cluster file: %w", err)
	}
	c, err := ParseCluster(data)
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster file %s: %w", path, err)
	}
	return c, nil
}

// ParseCluster decodes and validates a cluster from YAML.
func ParseCluster(data []byte) (Cluster, error) {
	var c Cluster
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Cluster{}, fmt.Errorf("decoding: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Cluster{}, err
	}
	return c, nil
}

// Validate checks every pool, naming the first bad field and its value.
func (c Cluster) Validate() error {
	if len(c.Pools) == 0 {
		return fmt.Errorf("pools: expected at least one node pool, found none")
	}
	seen := map[string]int{}
	for i, p := range c.Pools {
		field := fmt.Sprintf("pools[%d]", i)
		if j, dup := seen[p.Name]; dup {
			return fmt.Errorf("%s.name: expected a unique pool name, found %q, also used by pools[%d]", field, p.Name, j)
		}
		seen[p.Name] = i
		if err := p.validate(field); err != nil {
			return err
		}
	}
	return nil
}

// NodeCount is the number of nodes in the cluster.
func (c Cluster) NodeCount() int {
	n := 0
	for _, p := range c.Pools {
		n += p.Count
	}
	return n
}

// validate checks one pool; field is its path in the cluster, e.g. "pools[2]".
func (p NodePool) validate(field string) error {
	if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
		return fmt.Errorf("%s.name: expected a DNS-1123 label, found %q: %s", field, p.Name, errs[0])
	}
	if p.Count < 1 {
		return fmt.Errorf("%s.count: expected at least 1, found %d", field, p.Count)
	}
	for _, f := range []struct {
		name  string
		value int
	}{{"pods", p.Pods}, {"gpus", p.GPUs}, {"draGPUs", p.DRAGPUs}, {"racks", p.Racks}, {"zones", p.Zones}} {
		if f.value < 0 {
			return fmt.Errorf("%s.%s: expected a non-negative number, found %d", field, f.name, f.value)
		}
	}
	if _, err := positiveQuantity(field+".cpu", p.CPU); err != nil {
		return err
	}
	if _, err := positiveQuantity(field+".memory", p.Memory); err != nil {
		return err
	}
	for k, v := range p.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("%s.labels: expected a qualified label key, found %q: %s", field, k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("%s.labels[%s]: expected a label value, found %q: %s", field, k, v, errs[0])
		}
	}
	if errs := validation.IsValidLabelValue(p.GPUProduct); len(errs) > 0 {
		return fmt.Errorf("%s.gpuProduct: expected a label value, found %q: %s", field, p.GPUProduct, errs[0])
	}
	if err := p.validateDRA(field); err != nil {
		return err
	}
	for i, t := range p.Taints {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Errorf("%s.taints[%d].key: expected a qualified name, found %q: %s", field, i, t.Key, errs[0])
		}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return fmt.Errorf("%s.taints[%d].effect: expected NoSchedule, PreferNoSchedule or NoExecute, found %q", field, i, t.Effect)
		}
	}
	return nil
}

// validateDRA checks the pool's DRA GPU fields; field is its path in the cluster.
func (p NodePool) validateDRA(field string) error {
	if p.DRAGPUs > resourceapi.ResourceSliceMaxDevices {
		return fmt.Errorf("%s.draGPUs: expected at most %d (the devices of one ResourceSlice), found %d", field, resourceapi.ResourceSliceMaxDevices, p.DRAGPUs)
	}
	if p.DRAGPUs > 0 && p.GPUs > 0 {
		return fmt.Errorf("%s.draGPUs: expected no DRA GPUs in a pool with gpus (%d nvidia.com/gpu), found %d", field, p.GPUs, p.DRAGPUs)
	}
	for name, value := range map[string]string{"draProduct": p.DRAProduct, "draMemory": p.DRAMemory, "clique": p.Clique} {
		if value != "" && p.DRAGPUs == 0 {
			return fmt.Errorf("%s.%s: expected only with draGPUs, found %q in a pool without DRA GPUs", field, name, value)
		}
	}
	if err := checkAttributeString(p.DRAProduct); err != nil {
		return fmt.Errorf("%s.draProduct: %w", field, err)
	}
	if p.DRAMemory != "" {
		if _, err := positiveQuantity(field+".draMemory", p.DRAMemory); err != nil {
			return err
		}
	}
	if errs := validation.IsValidLabelValue(p.Clique); len(errs) > 0 {
		return fmt.Errorf("%s.clique: expected a label value, found %q: %s", field, p.Clique, errs[0])
	}
	return nil
}

// positiveQuantity parses value as a resource quantity greater than zero.
func positiveQuantity(field, value string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return q, fmt.Errorf("%s: expected a quantity such as \"64\" or \"512Gi\", found %q", field, value)
	}
	if q.Sign() <= 0 {
		return q, fmt.Errorf("%s: expected a quantity greater than zero, found %q", field, value)
	}
	return q, nil
}

// Nodes builds the cluster's Node objects, each Ready with the pool's capacity. The
// cluster must be valid.
func (c Cluster) Nodes() ([]*v1.Node, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	nodes := make([]*v1.Node, 0, c.NodeCount())
	for _, p := range c.Pools {
		for i := range p.Count {
			nodes = append(nodes, p.node(i, len(nodes)))
		}
	}
	return nodes, nil
}

// node builds the i-th node of the pool; seq numbers it within the whole cluster.
func (p NodePool) node(i, seq int) *v1.Node {
	name := p.Name + "-" + strconv.Itoa(i)
	labels := map[string]string{
		v1.LabelHostname:   name,
		v1.LabelOSStable:   "linux",
		v1.LabelArchStable: "amd64",
		LabelPool:          p.Name,
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	if p.GPUProduct != "" {
		labels[LabelGPUProduct] = p.GPUProduct
	}
	if p.Racks > 0 {
		labels[LabelRack] = fmt.Sprintf("%s-rack-%d", p.Name, i*p.Racks/p.Count)
	}
	if p.Zones > 0 {
		labels[v1.LabelTopologyZone] = fmt.Sprintf("%s-zone-%d", p.Name, i*p.Zones/p.Count)
	}
	if p.Clique != "" {
		labels[LabelGPUClique] = p.Clique
	}
	capacity := p.capacity()
	now := metav1.Now().Rfc3339Copy()
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: p.draAnnotations()},
		Spec:       v1.NodeSpec{Taints: append([]v1.Taint(nil), p.Taints...)},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Phase:       v1.NodeRunning,
			Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				Message: "simulated kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			Addresses: []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", 64+seq>>16&63, seq>>8&255, seq&255)},
				{Type: v1.NodeHostName, Address: name},
			},
			NodeInfo: v1.NodeSystemInfo{
				KubeletVersion: "v1.37.2-sandbox", OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "sandbox://1.0",
			},
		},
	}
}

// draAnnotations describe one node's DRA GPUs to the sandbox's driver (see
// draGPUs), or are nil for a pool without.
func (p NodePool) draAnnotations() map[string]string {
	if p.DRAGPUs == 0 {
		return nil
	}
	return map[string]string{
		AnnotationDRAGPUs:    strconv.Itoa(p.DRAGPUs),
		AnnotationDRAProduct: cmp.Or(p.DRAProduct, DefaultDRAProduct),
		AnnotationDRAMemory:  cmp.Or(p.DRAMemory, DefaultDRAMemory),
	}
}

// capacity is one node's resources. The pool must be valid.
func (p NodePool) capacity() v1.ResourceList {
	pods := p.Pods
	if pods == 0 {
		pods = defaultMaxPods
	}
	r := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse(p.CPU),
		v1.ResourceMemory:           resource.MustParse(p.Memory),
		v1.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
		v1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	if p.GPUs > 0 {
		r[ResourceGPU] = *resource.NewQuantity(int64(p.GPUs), resource.DecimalSI)
	}
	return r
}
