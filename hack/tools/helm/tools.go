//go:build tools

// Package tools pins helm, which test/helm builds to a temporary directory to render
// deploy/helm/muster. It is a module of its own so that helm's dependencies never meet
// the main module's.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
