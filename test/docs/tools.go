//go:build tools

// This file keeps kubectl's modules in go.mod and go.sum: test/docs builds kubectl
// (k8s.io/kubernetes/cmd/kubectl, at the Kubernetes version muster links) to run the
// documented commands.
package docs

import _ "k8s.io/kubernetes/cmd/kubectl"
