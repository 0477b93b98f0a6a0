# The test command of the README: gofmt, go vet and the whole test suite.
.PHONY: test build vet fmt fuzz

GO ?= go
GOFMT ?= $(shell $(GO) env GOROOT)/bin/gofmt

test: fmt vet fuzz
	$(GO) test -count=1 -timeout 40m ./...

# fuzz runs every native fuzz target (func FuzzX in a tracked *_fuzz_test.go) for
# FUZZTIME with FUZZPARALLEL workers; its seeds in testdata/fuzz/FuzzX run first. A
# failing input is written to that directory: commit it with the fix, as a regression
# seed. For a long run: make fuzz FUZZTIME=10m. The default is a count of inputs, not a
# duration: with a duration, Go 1.26's fuzzing coordinator may report its own deadline
# as a failure when a worker on a loaded machine answers late (golang/go#75804, fixed
# in Go 1.27; CI saw "FuzzFromVolcano: context deadline exceeded" with no input).
FUZZTIME ?= 2000x
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

# The server image: muster-scheduler (serve and version only), static, on scratch, as
# user 65532, written by go-containerregistry as an OCI archive. No Docker daemon. The
# archive is a build output under bin/ (ignored by git): load it with
# `podman load -i bin/muster-scheduler.oci.tar` or push it with
# `skopeo copy oci-archive:bin/muster-scheduler.oci.tar docker://REGISTRY/muster:TAG`.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
IMAGE_REF ?= ghcr.io/muster-sched/muster:$(VERSION)
LDFLAGS := -s -w -X github.com/muster-sched/muster/internal/version.version=$(VERSION) \
	-X github.com/muster-sched/muster/internal/version.commit=$(COMMIT)
.PHONY: image scheduler
scheduler:
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/muster-scheduler ./cmd/muster-scheduler

image: scheduler
	$(GO) run ./hack/image -binary bin/muster-scheduler -out bin/muster-scheduler.oci.tar -ref $(IMAGE_REF) -version $(VERSION)

# Regenerate deepcopy functions (api/...) and CRD YAML (deploy/crd/) with the
# controller-gen pinned in hack/tools/go.mod. The outputs are committed.
.PHONY: generate
generate:
	GO=$(GO) hack/generate.sh
