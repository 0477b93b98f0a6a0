# The test command of the README: gofmt, go vet and the whole test suite.
.PHONY: test build vet fmt

GO ?= go
GOFMT ?= $(shell $(GO) env GOROOT)/bin/gofmt

test: fmt vet
	$(GO) test -count=1 -timeout 40m ./...

# fmt fails, naming them, if tracked Go files are not gofmt-formatted.
fmt:
	@unformatted=$$($(GOFMT) -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-formatted:"; echo "$$unformatted"; exit 1; fi

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/muster ./cmd/muster

# Regenerate deepcopy functions (api/...) and CRD YAML (deploy/crd/) with the
# controller-gen pinned in hack/tools/go.mod. The outputs are committed.
.PHONY: generate
generate:
	GO=$(GO) hack/generate.sh
