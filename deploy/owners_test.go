package deploy

import (
	"cmp"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/muster-sched/muster/internal/source"
)

// TestRBACGetsExactlyTheOwnerKinds checks that muster's ClusterRole grants get on
// exactly the owner kinds of internal/source's registry, besides the resources muster
// watches (nodes, pods, namespaces, PriorityClasses, Queues and the registry's group
// APIs): an owner kind added to the registry without its rule, or a rule left behind
// for a kind removed from it, fails here.
func TestRBACGetsExactlyTheOwnerKinds(t *testing.T) {
	objs, err := RBAC()
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok && r.Name == "muster" {
			role = r
		}
	}
	if role == nil {
		t.Fatalf("no ClusterRole muster among the %d objects of deploy/rbac", len(objs))
	}
	watched := map[schema.GroupResource]bool{
		{Resource: "nodes"}: true, {Resource: "pods"}: true, {Resource: "namespaces"}: true,
		{Group: "scheduling.k8s.io", Resource: "priorityclasses"}: true,
		{Group: "muster.dev", Resource: "queues"}:                 true,
		// What kube-scheduler's filters, hosted in placement, read (controller's
		// filterObjects).
		{Resource: "persistentvolumeclaims"}: true, {Resource: "persistentvolumes"}: true,
		{Group: "storage.k8s.io", Resource: "storageclasses"}:    true,
		{Group: "storage.k8s.io", Resource: "csinodes"}:          true,
		{Group: "storage.k8s.io", Resource: "csidrivers"}:        true,
		{Group: "resource.k8s.io", Resource: "resourceclaims"}:   true,
		{Group: "resource.k8s.io", Resource: "resourceslices"}:   true,
		{Group: "resource.k8s.io", Resource: "deviceclasses"}:    true,
		{Group: "resource.k8s.io", Resource: "devicetaintrules"}: true,
	}
	for _, api := range source.GroupAPIs() {
		watched[api.Resource.GroupResource()] = true
	}
	var got []schema.GroupResource
	for _, rule := range role.Rules {
		if !slices.Contains(rule.Verbs, "get") {
			continue
		}
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				if gr := (schema.GroupResource{Group: g, Resource: r}); !watched[gr] {
					got = append(got, gr)
				}
			}
		}
	}
	var want []schema.GroupResource
	for _, k := range source.OwnerKinds() {
		plural, _ := meta.UnsafeGuessKindToResource(k.GroupKind.WithVersion(k.Versions[0]))
		want = append(want, plural.GroupResource())
	}
	order := func(a, b schema.GroupResource) int {
		if a.Group != b.Group {
			return cmp.Compare(a.Group, b.Group)
		}
		return cmp.Compare(a.Resource, b.Resource)
	}
	slices.SortFunc(got, order)
	slices.SortFunc(want, order)
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("resources deploy/rbac/cluster_role.yaml grants get on, besides those muster watches (-registry's owner kinds +granted):\n%s", diff)
	}
}
