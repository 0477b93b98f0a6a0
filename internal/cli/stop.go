package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/source"
)

func newStopCmd(f *Flags) *cobra.Command {
	return &cobra.Command{
		Use:   "stop GROUP",
		Short: "Stop a group: muster evicts its members and keeps it out of the queue until resumed",
		Long: `stop sets muster.dev/stopped: "true" on the group's PodGroup (or, for a plain group, on
its pods). muster evicts every member the group holds (their controller recreates them;
muster does not bind them) and keeps the group in phase Stopped until ` + "`resume`" + `.`,
		Example: "  kubectl muster stop bert -n team-a",
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return setStopped(cmd, f, args[0], true) },
	}
}

func newResumeCmd(f *Flags) *cobra.Command {
	return &cobra.Command{
		Use:     "resume GROUP",
		Short:   "Resume a stopped group: it is queued again",
		Example: "  kubectl muster resume bert -n team-a",
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return setStopped(cmd, f, args[0], false) },
	}
}

// setStopped writes the stop annotation on a group, or removes it.
func setStopped(cmd *cobra.Command, f *Flags, name string, stop bool) error {
	c, err := f.clients()
	if err != nil {
		return err
	}
	ns, err := f.namespace()
	if err != nil {
		return err
	}
	var value any // nil removes the annotation
	verb := "resumed"
	if stop {
		value, verb = "true", "stopped"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{musterv1alpha1.StoppedAnnotation: value}}})
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	what, err := patchGroup(cmd.Context(), c, ns, name, patch)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s/%s %s\n", what, ns, name, verb)
	return nil
}

// patchGroup patches the group object of that name in the first group API that has one,
// or else the pods of the plain group of that name. It returns what it patched.
func patchGroup(ctx context.Context, c explain.Clients, ns, name string, patch []byte) (string, error) {
	for _, api := range source.GroupAPIs() {
		_, err := c.Dynamic.Resource(api.Resource).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return api.Resource.GroupResource().String(), nil
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		default:
			return "", fmt.Errorf("patching %s %s/%s: %w", api.Resource.GroupResource(), ns, name, err)
		}
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: musterv1alpha1.GroupLabel + "=" + name})
	if err != nil {
		return "", fmt.Errorf("listing the pods of group %s/%s: %w", ns, name, err)
	}
	if len(pods.Items) == 0 {
		return "", fmt.Errorf("group %s/%s: no PodGroup of that name and no pod labelled %s=%s", ns, name, musterv1alpha1.GroupLabel, name)
	}
	var names []string
	for _, p := range pods.Items {
		if _, err := c.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return "", fmt.Errorf("patching pod %s/%s: %w", ns, p.Name, err)
		}
		names = append(names, p.Name)
	}
	return "pods " + strings.Join(names, ","), nil
}
