package sandbox

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
)

// crdTimeout bounds the wait for the CRDs to be Established.
const crdTimeout = 30 * time.Second

// installCRDs creates (or updates) each CRD and waits until all are Established.
func installCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if len(crds) == 0 {
		return nil
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating an apiextensions client: %w", err)
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		_, err := api.Create(ctx, crd.DeepCopy(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = updateCRD(ctx, client, crd)
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, crdTimeout, true, func(ctx context.Context) (bool, error) {
		for _, crd := range crds {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil || !established(got) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d CRDs to be Established: %w", len(crds), err)
	}
	return nil
}

// updateCRD replaces the spec of an existing CRD with crd's.
func updateCRD(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Spec = crd.Spec
	_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// established reports whether crd has condition Established=True.
func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// nodeCreateWorkers is how many nodes CreateNodes creates in parallel.
const nodeCreateWorkers = 16

// CreateNodes creates the Node objects of cluster c through client, in parallel.
// It returns the first error.
func CreateNodes(ctx context.Context, client kubernetes.Interface, c Cluster) error {
	nodes, err := c.Nodes()
	if err != nil {
		return err
	}
	errs := make([]error, len(nodes))
	workqueue.ParallelizeUntil(ctx, nodeCreateWorkers, len(nodes), func(i int) {
		if _, err := client.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{}); err != nil {
			errs[i] = fmt.Errorf("creating node %s: %w", nodes[i].Name, err)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}
