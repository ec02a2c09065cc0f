# faultbench — the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN      := bin/faultbench
GOBIN    := $(shell $(GO) env GOPATH)/bin
export GOFLAGS := -buildvcs=false

.PHONY: all build setup lint test test-short demo bench clean

all: build

## build: compile bin/faultbench
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/faultbench

## setup: install what the targets and tools need (idempotent)
setup:
	bash scripts/setup.sh

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GOBIN)/staticcheck ./...

## test: the whole suite, integration tests against real databases included.
## Database nodes run from the normally built binary (FAULTBENCH_SELF), not the
## race-instrumented test binaries, and packages run one at a time (-p 1) so the
## cluster tests do not starve each other on two cores. Skipped tests are listed
## at the end (scripts/testskips), and TestRenderLong, a timing bar that is
## skipped under -race, runs in a second step without it.
test: setup build lint
	FAULTBENCH_BIN=$(CURDIR)/$(BIN) FAULTBENCH_SELF=$(CURDIR)/$(BIN) $(GO) test -race -p 1 -count=1 -timeout 20m -json ./... | $(GO) run ./scripts/testskips
	$(GO) test -count=1 -run '^TestRenderLong$$' ./internal/report/

## test-short: unit tests only (no databases)
test-short:
	$(GO) test -short -count=1 ./...

## demo: the failover demo on a local 3-node etcd cluster started by faultbench
demo: setup build
	$(BIN) demo

## bench: compare faultbench with its peers side by side (see docs/PERFORMANCE.md)
bench: setup build
	bash bench/vs-peers.sh

clean:
	rm -rf bin
