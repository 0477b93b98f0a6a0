package source_test

import (
	bufiopkg "bufio"
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// TestExamples reads the objects under examples/ that operators produce (a group object and
// its pods) and checks that muster sees exactly one valid group of the declared minimum,
// with every pod a member of it.
func TestExamples(t *testing.T) {
	files := []struct {
		path      string
		key       string
		minMember int
		// scheduler is the schedulerName the producer gives the pods, "" for muster.
		scheduler string
	}{
		{"pytorchjob/generated.yaml", "Coscheduling/default/bert", 8, ""},
		{"polyaxon/generated.yaml", "Coscheduling/default/bert-finetune", 4, ""},
		{"trainer-v2/generated.yaml", "Coscheduling/default/llama-sft", 4, ""},
		{"kuberay/generated.yaml", "Coscheduling/default/llm-batch", 5, "scheduler-plugins-scheduler"},
		{"volcano/generated.yaml", "Volcano/default/resnet", 4, ""},
		{"lws/generated.yaml", "Volcano/default/infer-0-5d8f7c9b4", 4, ""},
		{"native/generated.yaml", "Native/default/vit", 4, ""},
		{"dra/generated.yaml", "Coscheduling/default/llama-dra", 4, ""},
		{"plain/pods.yaml", "Labels/default/sweep", 4, ""},
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, resourcev1.AddToScheme, schedulingv1beta1.AddToScheme, spv1alpha1.AddToScheme, volcanov1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	decode := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode
	for _, f := range files {
		t.Run(f.path, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "examples", f.path))
			if err != nil {
				t.Fatal(err)
			}
			var pods []*corev1.Pod
			var specs []engine.GroupSpec
			reader := utilyaml.NewYAMLReader(bufiopkg.NewReader(bytes.NewReader(data)))
			for {
				doc, err := reader.Read()
				if err != nil {
					break
				}
				if commentsOnly(doc) {
					continue
				}
				obj, _, err := decode(doc, nil, nil)
				if err != nil {
					t.Fatalf("%s: %v", f.path, err)
				}
				switch o := obj.(type) {
				case *corev1.Pod:
					pods = append(pods, o)
				case *spv1alpha1.PodGroup:
					specs = append(specs, source.FromCoscheduling(o, nil, nil))
				case *volcanov1beta1.PodGroup:
					specs = append(specs, source.FromVolcano(o, nil))
				case *schedulingv1beta1.PodGroup:
					specs = append(specs, source.FromNative(o, nil))
				case *resourcev1.ResourceClaimTemplate:
					// The members' claims: placement reads them, not the group's source.
				default:
					t.Fatalf("%s: unexpected object %T", f.path, obj)
				}
			}
			for _, p := range pods {
				if got := source.GroupOf(p).Key(); got != f.key {
					t.Errorf("pod %s is in group %s, want %s", p.Name, got, f.key)
				}
			}
			if len(specs) == 0 {
				specs = append(specs, source.FromLabels(source.GroupOf(pods[0]), pods, nil))
			}
			spec := specs[0]
			source.CheckMembers(&spec, pods, nil, []string{cmp.Or(f.scheduler, "muster")})
			if spec.Key != f.key || spec.MinMember != f.minMember || len(spec.Invalid) != 0 {
				t.Fatalf("group %s minMember %d invalid %q; want %s minMember %d valid", spec.Key, spec.MinMember, spec.Invalid, f.key, f.minMember)
			}
			if len(pods) < spec.MinMember {
				t.Fatalf("%d pods, fewer than minMember %d", len(pods), spec.MinMember)
			}
		})
	}
}

// commentsOnly reports whether a YAML document holds nothing but comments and blank lines.
func commentsOnly(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && string(line) != "---" {
			return false
		}
	}
	return true
}
