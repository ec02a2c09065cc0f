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

.PHONY: all build setup setup-demo lint race-deps test test-build test-suite test-short demo bench clean

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
LINT_SH = out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi; \
	  $(LINT_NICE) $(GO) vet ./... && $(LINT_NICE) $(GOBIN)/staticcheck ./...
lint:
	@$(LINT_SH)

## test: the whole suite, integration tests against real databases included.
## make test runs setup beside test-build: scripts/setup.sh waits on apt-get
## and downloads, the build (bin/faultbench, then race-deps) on the CPU.
## Then test-suite with LINT=1: lint runs in the suite's background step.
test:
	@$(MAKE) --no-print-directory -j 2 setup test-build
	@$(MAKE) --no-print-directory test-suite LINT=1

## test-build: bin/faultbench, then race-deps
test-build: build
	@$(MAKE) --no-print-directory race-deps

## race-deps: compile with -race, once, every package the tests import (not
## the tests themselves): the test groups that run side by side in
## test-suite would each compile them on a fresh machine
race-deps:
	@$(GO) build -race $$($(GO) list -deps -test -f '{{if and (not .ForTest) (ne .Name "main")}}{{.ImportPath}}{{end}}' ./... | grep -v '\.test$$')

## test-suite: the test steps of make test, without its setup and build.
## Database nodes run from the normally built binary (FAULTBENCH_SELF), not
## the race-instrumented test binaries. The packages whose tests start
## databases, processes or clusters (scripts/testpkgs.sh serial) run in two
## lanes side by side, each lane one package at a time (-p 1): most of their
## time is spent waiting (fixed run phases, elections, node timeouts, SSH
## round trips), not computing, so two of them at once share two cores
## without starving each other, and a lane links its next test binary while
## the other runs. Lane a holds every package that creates network
## namespaces or SSH hosts (scripts/testpkgs.sh: they must not run at once),
## balanced with lane b by their test times (scripts/testpkgs.sh has them).
## Beside the lanes, at nice 10, the background step runs the pure unit
## packages (-p 2), then with LINT=1 make lint: CPU work that takes the
## cycles the lanes leave while they wait, and yields them when a lane needs
## them. Before (CI, 2026-11-27: make test 1373 s on a fresh clone) every
## step ran after the one before: setup (about 100 s of apt-get, Maven and
## go install on this machine's first run), the build, lint (go vet and a
## cold staticcheck), the unit packages (compiling every dependency again
## with -race) and then the lanes (the serial packages' 1284 s one at a
## time, about 660 s a lane); now setup overlaps the build and race-deps,
## and the unit packages and lint overlap the lanes. The tests must not
## depend on timing (a loaded 2-core machine is the rule, not the
## exception), so neither the lanes nor the background step is an excuse
## for a timed assertion. Every group keeps
## -race: the harness (runner, measure, drivers, txkv, experiment) runs
## inside the test binaries and the race detector has caught real races
## there. go vet runs in lint, so go test does not repeat it (-vet=off).
## Lane a's go test -json goes to the pipe as it comes; lane b's and the
## unit packages' go to files appended after it (processes writing long
## JSON lines to one pipe could interleave them), lint's output is shown
## only when it failed. Skipped tests are listed at the end
## (scripts/testskips), and TestRenderLong, a timing bar that is skipped
## under -race, runs in a last step without it.
test-suite: LINT_NICE = nice -n 10
test-suite:
	@test -n "$(UNIT_PKGS)" && test -n "$(LANE_A_PKGS)" && test -n "$(LANE_B_PKGS)" || { echo "scripts/testpkgs.sh listed no packages" >&2; exit 1; }
	export FAULTBENCH_BIN=$(CURDIR)/$(BIN) FAULTBENCH_SELF=$(CURDIR)/$(BIN); \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	{ $(GOTEST) -p 1 $(LANE_B_PKGS) >"$$tmp/lane-b" 2>&1 & \
	  { nice -n 10 $(GOTEST) -p 2 $(UNIT_PKGS) >"$$tmp/unit" 2>&1; \
	    if [ -n "$(LINT)" ]; then ( $(LINT_SH) ) >"$$tmp/lint" 2>&1 || touch "$$tmp/lint-failed"; fi; } & \
	  $(GOTEST) -p 1 $(LANE_A_PKGS); \
	  wait; cat "$$tmp/lane-b" "$$tmp/unit"; } | $(GO) run ./scripts/testskips; rc=$$?; \
	if [ -e "$$tmp/lint-failed" ]; then cat "$$tmp/lint"; echo "make lint failed" >&2; rc=1; fi; \
	exit $$rc
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
