# faultbench — the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN      := bin/faultbench
GOBIN    := $(shell $(GO) env GOPATH)/bin
export GOFLAGS := -buildvcs=false
# the package groups of make test (evaluated only when used)
UNIT_PKGS   = $(shell bash scripts/testpkgs.sh unit)
LANE_A_PKGS = $(shell bash scripts/testpkgs.sh lane-a)
LANE_B_PKGS = $(shell bash scripts/testpkgs.sh lane-b)
GOTEST      = $(GO) test -race -count=1 -timeout 20m -vet=off -json

.PHONY: all build setup setup-demo lint test test-suite test-short demo bench clean

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
## race-instrumented test binaries. The pure unit packages run first, in
## parallel (-p 2). The packages whose tests start databases, processes or
## clusters (scripts/testpkgs.sh serial) then run in two lanes side by side,
## each lane one package at a time (-p 1): most of their time is spent
## waiting (fixed run phases, elections, node timeouts, SSH round trips), not
## computing, so two of them at once share two cores without starving each
## other, and a lane links its next test binary while the other runs (the
## serial group was 1284 s of test time one at a time in CI, 2026-11-27). Lane
## a holds every package that creates network namespaces or SSH hosts
## (scripts/testpkgs.sh: they must not run at once), balanced with lane b by
## their test times. The tests must not depend on timing (a loaded 2-core
## machine is the rule, not the exception), so the lanes are no excuse for a
## timed assertion. Both lanes keep -race: the harness (runner, measure,
## drivers, txkv, experiment) runs inside the test binaries and the race
## detector has caught real races there. go vet runs once in lint, so go test
## does not repeat it (-vet=off). Lane b writes its go test -json to a file,
## appended after lane a (two processes writing long JSON lines to one pipe
## could interleave them). Skipped tests are listed at the end
## (scripts/testskips), and TestRenderLong, a timing bar that is skipped
## under -race, runs in a last step without it.
test: setup build lint
	@$(MAKE) --no-print-directory test-suite

## test-suite: the test steps of make test, without its setup, build and lint
test-suite:
	@test -n "$(UNIT_PKGS)" && test -n "$(LANE_A_PKGS)" && test -n "$(LANE_B_PKGS)" || { echo "scripts/testpkgs.sh listed no packages" >&2; exit 1; }
	export FAULTBENCH_BIN=$(CURDIR)/$(BIN) FAULTBENCH_SELF=$(CURDIR)/$(BIN); \
	laneb=$$(mktemp); trap 'rm -f "$$laneb"' EXIT; \
	{ $(GOTEST) -p 2 $(UNIT_PKGS); \
	  $(GOTEST) -p 1 $(LANE_B_PKGS) >"$$laneb" 2>&1 & \
	  $(GOTEST) -p 1 $(LANE_A_PKGS); \
	  wait; cat "$$laneb"; } | $(GO) run ./scripts/testskips
	$(GO) test -count=1 -run '^TestRenderLong$$' ./internal/report/

## test-short: unit tests only (no databases)
test-short:
	$(GO) test -short -count=1 ./...

## demo: the failover demo on a local 3-node etcd cluster started by faultbench
demo: setup-demo build
	$(BIN) demo

## bench: compare faultbench's client with each target's native peer side by side,
## and the history's cost (docs/PERFORMANCE.md); one or some: make bench TARGETS=postgres
bench: setup build
	bash bench/vs-peers.sh $(TARGETS)

clean:
	rm -rf bin
