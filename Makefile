# Nexus: make help lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
export GOWORK := $(CURDIR)/go.work

# Tool versions, pinned; `make tools` installs them into ./bin.
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPC_GATEWAY_VERSION := v2.33.0
STATICCHECK_VERSION := v0.8.2
GRPCURL_VERSION := v1.9.3

# The commit nexus version names, handed to the linker (the toolchain's own
# stamping skips git worktrees and workspace mode); "-dirty" marks a tree
# with uncommitted changes. Outside a git checkout it is empty, and nexus
# version says the commit is unknown.
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
ifneq ($(GIT_COMMIT),)
GIT_COMMIT := $(GIT_COMMIT)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
endif
LDFLAGS := -X nexus.local/platform/version.commit=$(GIT_COMMIT)

# Every Go module of the workspace.
MODULES := $(shell go list -m -f '{{.Path}}' 2>/dev/null)
PACKAGES := $(addsuffix /...,$(MODULES))

# The packages that coordinate goroutines: make test runs their tests under the
# race detector (the runner and the pending call were the orchestrator's; the host
# link has no tests of its own, and the orchestrator's run it).
RACE_PACKAGES := nexus.local/services/orchestrator nexus.local/services/orchestrator/runner \
	nexus.local/services/orchestrator/call nexus.local/services/orchestrator/state/... \
	nexus.local/services/orchestrator/sweeper nexus.local/gateway nexus.local/cmd/nexus/internal/cli

# One package's tests may take this long. cmd/nexus/systemtest takes about 3 minutes
# alone and passed 15 on a machine loaded by other builds, so the limit is a
# net for a hung test, not a budget.
TEST_TIMEOUT ?= 25m

.PHONY: help
help: ## Show this help: run and test first, colour only on a terminal.
	@# [ -t 1 ] asks about make's own stdout: inside $$(...) it would ask about the substitution's pipe.
	@if [ -t 1 ]; then tty=1; else tty=; fi; awk -v tty="$$tty" -f scripts/make-help.awk $(MAKEFILE_LIST)

$(BIN)/buf:
	GOBIN=$(BIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(BIN)/protoc-gen-grpc-gateway:
	GOBIN=$(BIN) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
$(BIN)/staticcheck:
	GOBIN=$(BIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
$(BIN)/grpcurl:
	GOBIN=$(BIN) go install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)
$(BIN)/protoc-gen-openapiv2:
	GOBIN=$(BIN) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)

TOOLS := $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-grpc-gateway $(BIN)/protoc-gen-openapiv2 $(BIN)/staticcheck $(BIN)/grpcurl

.PHONY: tools
tools: $(TOOLS) ## Install the pinned code generators, buf, staticcheck and grpcurl into ./bin.

.PHONY: deps
deps: ## Install what Nexus needs on this machine (Debian packages, npm packages).
	./scripts/install-deps.sh

.PHONY: gen
gen: $(TOOLS) ## Regenerate Go, OpenAPI and the web UI's API types from proto/.
	buf generate
	go generate ./gateway/openapi/
	cd gateway/web && npm run --silent types >/dev/null

.PHONY: lint
lint: $(TOOLS) breaking ## buf lint, buf breaking, buf format check, go vet, staticcheck, and the drift checks of generated code and the web build.
	buf lint
	buf format --diff --exit-code
	go vet $(PACKAGES)
	staticcheck $(PACKAGES)
	./scripts/check-drift.sh

# BREAKING_AGAINST is what the contracts must stay compatible with: the
# previous commit of the branch.
BREAKING_AGAINST ?= .git\#ref=HEAD~1

.PHONY: breaking
breaking: $(BIN)/buf ## buf breaking: the contracts against the previous commit (BREAKING_AGAINST).
	@if git rev-parse -q --verify HEAD~1 >/dev/null; then buf breaking --against '$(BREAKING_AGAINST)'; else echo "breaking: no previous commit to compare with"; fi

.PHONY: web
web: ## Build the web UI (gateway/web/dist) from the packages deps installed from the lockfile.
	cd gateway/web && npm run --silent build

.PHONY: build
build: ## Build the nexus binary into ./bin (stamped with the commit).
	go build -ldflags '$(LDFLAGS)' -o $(BIN)/nexus ./cmd/nexus

.PHONY: revit-addin
revit-addin: ## Build the Revit add-in for pyRevit: dist/Nexus-revit-addin-<version>.zip (see hosts/revit/README.md).
	go run ./hosts/revit/cmd/revitaddin -o dist

.PHONY: bench-revit
bench-revit: ## The Revit add-in's cost on the double at 1,000, 10,000 and 100,000 elements (API calls and times; docs/bench.md keeps the table).
	python3 hosts/revit/bench/bench.py --sizes 1000,10000,100000

.PHONY: release
release: ## Build the release into dist/: nexus for Linux, macOS, Windows (amd64, arm64), the Revit and FreeCAD add-ons, the chart, an SPDX SBOM, SHA256SUMS (VERSION=, default the chart's appVersion).
	./scripts/release.sh

.PHONY: bench
bench: build ## Run the short nexus bench (in-process and Redis state); writes docs/bench.json and docs/bench.svg.
	mkdir -p docs
	$(BIN)/nexus bench --short --redis auto --json docs/bench.json --chart docs/bench.svg

.PHONY: run
run: ## Install what is missing, build, and start the whole stack (nexus dev).
	@echo "make run: checking what nexus dev needs (FreeCAD, Xvfb, the web UI's npm packages; the tests' are left to make test)"
	./scripts/install-deps.sh --run
	@echo "make run: building the web UI into gateway/web/dist"
	cd gateway/web && npm run --silent build
	@echo "make run: building bin/nexus (the first build compiles every dependency: a few minutes)"
	@$(MAKE) --no-print-directory build
	$(BIN)/nexus dev

.PHONY: test
test: deps lint build ## Run every test (real Redis, PostgreSQL, FreeCAD, Chromium).
	./scripts/ensure-redis.sh
	./scripts/ensure-postgres.sh
	@# Every package once: the ones that coordinate goroutines under the race
	@# detector only, the rest without it.
	go test -count=1 -timeout $(TEST_TIMEOUT) -skip '^TestShortBench$$' $$(go list $(PACKAGES) | grep -vxF "$$(go list $(RACE_PACKAGES))")
	go test -race -count=1 -timeout $(TEST_TIMEOUT) $(RACE_PACKAGES)
	@# nexus bench in its short form, once: its figures are printed, not
	@# asserted; the test checks the report holds every one.
	go test -count=1 -timeout $(TEST_TIMEOUT) -v -run '^TestShortBench$$' ./cmd/nexus/internal/bench/
	@# Resource targets are benchmarks, run once: 10,000 suspended runs.
	go test -count=1 -timeout $(TEST_TIMEOUT) -run '^$$' -bench 'BenchmarkSuspendedRuns' -benchtime 1x ./services/orchestrator/
