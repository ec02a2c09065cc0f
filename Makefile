# faultbench — the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN      := bin/faultbench
GOBIN    := $(shell $(GO) env GOPATH)/bin
export GOFLAGS := -buildvcs=false
# the two groups of make test (evaluated only when used)
UNIT_PKGS   = $(shell bash scripts/testpkgs.sh unit)
SERIAL_PKGS = $(shell bash scripts/testpkgs.sh serial)

.PHONY: all build setup setup-demo lint test test-short demo bench clean

all: build

## build: compile bin/faultbench
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/faultbench

## setup: install what the targets and tools need (idempotent)
setup:
	bash scripts/setup.sh

## setup-demo: what the demo needs, nothing else: Go (its etcd members run
## inside bin/faultbench; the build downloads the modules)
setup-demo:
	bash scripts/setup.sh --only demo

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GOBIN)/staticcheck ./...

## test: the whole suite, integration tests against real databases included.
## Database nodes run from the normally built binary (FAULTBENCH_SELF), not the
## race-instrumented test binaries. The packages whose tests start databases,
## processes or clusters (scripts/testpkgs.sh serial) run one at a time (-p 1)
## so that they do not starve each other on two cores; the others, pure unit
## tests, run first and in parallel. Skipped tests are listed at the end
## (scripts/testskips), and TestRenderLong, a timing bar that is skipped under
## -race, runs in a last step without it.
test: setup build lint
	@test -n "$(UNIT_PKGS)" && test -n "$(SERIAL_PKGS)" || { echo "scripts/testpkgs.sh listed no packages" >&2; exit 1; }
	export FAULTBENCH_BIN=$(CURDIR)/$(BIN) FAULTBENCH_SELF=$(CURDIR)/$(BIN); \
	{ $(GO) test -race -p 2 -count=1 -timeout 20m -json $(UNIT_PKGS); \
	  $(GO) test -race -p 1 -count=1 -timeout 20m -json $(SERIAL_PKGS); } | $(GO) run ./scripts/testskips
	$(GO) test -count=1 -run '^TestRenderLong$$' ./internal/report/

## test-short: unit tests only (no databases)
test-short:
	$(GO) test -short -count=1 ./...

## demo: the failover demo on a local 3-node etcd cluster started by faultbench
demo: setup-demo build
	$(BIN) demo

## bench: compare faultbench with its peers side by side (see docs/PERFORMANCE.md)
bench: setup build
	bash bench/vs-peers.sh

clean:
	rm -rf bin
