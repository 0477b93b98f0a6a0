#!/usr/bin/env bash
# Regenerates the committed generated files: deepcopy functions in every api package
# and the CustomResourceDefinition YAML in deploy/crd/, one file per CRD.
#
# controller-gen is built from the version pinned by hack/tools/go.mod (a module of
# its own, so that its k8s.io dependencies do not fight the main module's replace
# directives), fetched through the Go module proxy only. Run from anywhere:
#   hack/generate.sh        (or: make generate)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
go="${GO:-go}"
bin="${root}/hack/tools/bin"
controller_gen="${bin}/controller-gen"

# `go build` is a no-op when the binary is up to date with the pinned sources.
(cd "${root}/hack/tools" && "${go}" build -o "${controller_gen}" sigs.k8s.io/controller-tools/cmd/controller-gen)

cd "${root}"
"${controller_gen}" object paths=./api/...
# Generate into a fresh directory and swap it in, so that a CRD whose type was
# removed does not linger, and a failed run leaves deploy/crd untouched.
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
"${controller_gen}" crd paths=./api/... output:crd:dir="${tmp}"
rm -f deploy/crd/*.yaml
cp "${tmp}"/*.yaml deploy/crd/
# The Helm chart carries copies of the CRDs and the ClusterRole (a chart cannot read
# files outside itself); test/helm checks that they are equal.
cp deploy/crd/*.yaml deploy/helm/muster/files/crd/
cp deploy/rbac/cluster_role.yaml deploy/rbac/role.yaml deploy/rbac/user_roles.yaml deploy/helm/muster/files/rbac/
mkdir -p deploy/helm/muster/files/policies
cp deploy/policies/*.yaml deploy/helm/muster/files/policies/
