# The test command of the README. go vet and the whole test suite.
.PHONY: test build vet

GO ?= go

test: vet
	$(GO) test -count=1 -timeout 40m ./...

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/muster ./cmd/muster

# Regenerate deepcopy functions (api/...) and CRD YAML (deploy/crd/) with the
# controller-gen pinned in hack/tools/go.mod. The outputs are committed.
.PHONY: generate
generate:
	GO=$(GO) hack/generate.sh
