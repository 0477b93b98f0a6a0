# The test command of the README: gofmt, go vet and the whole test suite.
.PHONY: test build vet fmt fuzz

GO ?= go
GOFMT ?= $(shell $(GO) env GOROOT)/bin/gofmt

test: fmt vet fuzz
	$(GO) test -count=1 -timeout 40m ./...

# fuzz runs every native fuzz target (func FuzzX in a tracked *_fuzz_test.go) for
# FUZZTIME with FUZZPARALLEL workers; its seeds in testdata/fuzz/FuzzX run first. A
# failing input is written to that directory: commit it with the fix, as a regression
# seed. For a long run: make fuzz FUZZTIME=10m.
FUZZTIME ?= 3s
FUZZPARALLEL ?= 1
fuzz:
	@set -e; for file in $$(git ls-files '*_fuzz_test.go'); do \
	  for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' $$file); do \
	    echo "fuzz ./$$(dirname $$file) $$name ($(FUZZTIME))"; \
	    $(GO) test ./$$(dirname $$file) -run '^$$' -fuzz "^$$name\$$" -fuzztime=$(FUZZTIME) -parallel=$(FUZZPARALLEL); \
	  done; \
	done

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
