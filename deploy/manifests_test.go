package deploy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestParsedConfiguration checks that the shipped Configuration parses and says what
// the Deployment relies on: leader election on, in the ServiceAccount's namespace.
func TestParsedConfiguration(t *testing.T) {
	cfg, err := ParsedConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	if !*cfg.LeaderElection.Enabled || cfg.LeaderElection.LeaseNamespace != ServiceAccount.Namespace {
		t.Errorf("expected leader election on in %s, found enabled=%v in %s",
			ServiceAccount.Namespace, *cfg.LeaderElection.Enabled, cfg.LeaderElection.LeaseNamespace)
	}
}

// TestRBAC checks that the shipped RBAC decodes and binds a role to the
// ServiceAccount it creates.
func TestRBAC(t *testing.T) {
	objs, err := RBAC()
	if err != nil {
		t.Fatal(err)
	}
	var sa, bound bool
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			sa = sa || (o.Namespace == ServiceAccount.Namespace && o.Name == ServiceAccount.Name)
		case *rbacv1.ClusterRoleBinding:
			for _, s := range o.Subjects {
				bound = bound || (s.Kind == "ServiceAccount" && s.Namespace == ServiceAccount.Namespace && s.Name == ServiceAccount.Name)
			}
		}
	}
	if !sa || !bound {
		t.Errorf("expected ServiceAccount %s/%s created and bound by a ClusterRoleBinding, found created=%v bound=%v in %d objects",
			ServiceAccount.Namespace, ServiceAccount.Name, sa, bound, len(objs))
	}
}
