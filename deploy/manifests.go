package deploy

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// ManagerFiles holds the manifests of muster's Deployment, under "manager": the
// ConfigMap of its Configuration among them.
//
//go:embed manager/*.yaml
var ManagerFiles embed.FS

// RBACFiles holds muster's Namespace, ServiceAccount and the roles bound to it, under
// "rbac".
//
//go:embed rbac/*.yaml
var RBACFiles embed.FS

// configFile is the ConfigMap that holds muster's Configuration, and configKey the
// key of the Configuration in it.
const (
	configFile = "manager/config.yaml"
	configKey  = "config.yaml"
)

// ServiceAccount is the namespace and name of the ServiceAccount muster runs as.
var ServiceAccount = struct{ Namespace, Name string }{"muster-system", "muster"}

// ParsedConfiguration returns the Configuration deploy/ ships (the config.yaml of
// ConfigMap muster-config in manager/config.yaml), defaulted and validated as
// `muster serve --config` would read it. It is the one place that parses it: the
// tests, the sandbox and the bench run muster with what it returns.
func ParsedConfiguration() (*musterv1alpha1.Configuration, error) {
	data, err := ManagerFiles.ReadFile(configFile)
	if err != nil {
		return nil, fmt.Errorf("reading embedded %s: %w", configFile, err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.UnmarshalStrict(data, cm); err != nil {
		return nil, fmt.Errorf("decoding embedded %s: %w", configFile, err)
	}
	doc, ok := cm.Data[configKey]
	if !ok {
		return nil, fmt.Errorf("embedded %s: expected key %q in ConfigMap %s, found keys %v", configFile, configKey, cm.Name, keys(cm.Data))
	}
	cfg, err := musterv1alpha1.ParseConfiguration([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("embedded %s, key %s: %w", configFile, configKey, err)
	}
	return cfg, nil
}

// keys returns the keys of m, sorted.
func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RBAC decodes every object of the embedded rbac/*.yaml files (Namespace,
// ServiceAccount, ClusterRole, Roles and their bindings), in file name order, into
// client-go's typed objects, ready to create.
func RBAC() ([]runtime.Object, error) {
	const dir = "rbac"
	entries, err := fs.ReadDir(RBACFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded directory %q: %w", dir, err)
	}
	decoder := serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()
	var objs []runtime.Object
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".yaml" {
			continue
		}
		file := path.Join(dir, e.Name())
		data, err := RBACFiles.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s: %w", file, err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("decoding document %d of embedded %s: %w", i+1, file, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}
