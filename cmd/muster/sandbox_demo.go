package main

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/muster-sched/muster/internal/demo"
)

// runDemo runs the two-jobs example against the sandbox's scheduler.
func runDemo(ctx context.Context, out io.Writer, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	if err := demo.Run(ctx, kube, dyn, out, demo.DefaultOptions()); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}
