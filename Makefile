# mezzo build entry points. `make test` is what CI runs (see README.md).
GO ?= go
PROTO_FILES := $(shell find api/proto -name '*.proto' | sort)

.PHONY: build generate protos test test-short test-failover lint clean tools screenshots paper paper-plots oversubscription oversubscription-plot

# The build description shown by /version and /state (see internal/version:
# without these, a build falls back to Go's VCS stamp, then to the
# binary's modification time).
VERSION_PKG := mezzo/internal/version
LDFLAGS := -X $(VERSION_PKG).buildTime=$(shell date -u +%Y-%m-%dT%H:%M:%SZ) \
	-X $(VERSION_PKG).gitSHA=$(shell git rev-parse HEAD 2>/dev/null) \
	-X $(VERSION_PKG).buildUser=$(shell id -un 2>/dev/null)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/mezzo ./cmd/mezzo

# Regenerate Go code from api/proto. Needs protoc (Debian: protobuf-compiler)
# and protoc-gen-go at the version pinned in go.mod.
generate: tools
	find api -name '*.pb.go' -delete
	protoc -I api/proto --go_out=. --go_opt=module=mezzo $(PROTO_FILES)

tools:
	@command -v protoc >/dev/null || { echo "protoc missing: apt-get install protobuf-compiler"; exit 1; }
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go

# Rewrite the Mesos .proto files from the fact tables (rarely needed).
protos:
	python3 tools/facts2proto.py ../shared/reference/proto-facts.md api/proto api/proto/facts-extra.md

test:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/mezzo ./cmd/mezzo
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

# The long master-failover run (issue 11 §1): SIGKILL the leading master
# FAILOVER_KILLS times while two frameworks launch FAILOVER_TASKS tasks
# each; FAILOVER_SEED replays a run (its seed is logged).
FAILOVER_KILLS ?= 12
FAILOVER_TASKS ?= 400
test-failover:
	MEZZO_FAILOVER_KILLS=$(FAILOVER_KILLS) MEZZO_REGISTRAR_KILLS=$(FAILOVER_KILLS) MEZZO_FAILOVER_TASKS=$(FAILOVER_TASKS) MEZZO_FAILOVER_SEED=$(FAILOVER_SEED) \
		$(GO) test -count=1 -v -timeout 30m -run 'TestFailoverKillLeaderRandomized|TestRegistrarLinearizable' ./e2e/ ./replog/

# Screenshots of the web UI's main pages for docs/webui.md, taken in headless
# Chromium by the browser suite's own code (webui/browsertest).
screenshots:
	$(GO) test -count=1 -v -timeout 10m -run TestScreenshots ./webui/browsertest -screenshots=$(CURDIR)/docs/images

# The paper's experiments (docs/paper.md): each writes its results to
# docs/paper/<name>.json, then paperplot draws the figures beside them
# (about 12 minutes on the 2-core development machine). PAPER_FLAGS go to
# every experiment (e.g. --seed=2); paper-plots redraws from the results.
PAPER_EXPERIMENTS ?= locality sharing overhead failover
paper: build
	@mkdir -p docs/paper
	@for e in $(PAPER_EXPERIMENTS); do \
		echo "mezzo bench paper $$e --json -v $(PAPER_FLAGS)"; \
		bin/mezzo bench paper $$e --json -v $(PAPER_FLAGS) > docs/paper/$$e.json.tmp && mv docs/paper/$$e.json.tmp docs/paper/$$e.json || exit 1; \
	done
	$(GO) run ./tools/paperplot -dir docs/paper

paper-plots:
	$(GO) run ./tools/paperplot -dir docs/paper

# The oversubscription demonstration (docs/oversubscription.md): needs root
# and cgroups v1; about two minutes a round. OVS_FLAGS go to the benchmark;
# oversubscription-plot redraws docs/images/oversubscription.svg from the
# committed result (the last round's runs).
OVS_FLAGS ?= --rounds=3
oversubscription: build
	@mkdir -p docs/oversubscription
	bin/mezzo bench oversubscription --json $(OVS_FLAGS) > docs/oversubscription/bench.json.tmp && mv docs/oversubscription/bench.json.tmp docs/oversubscription/bench.json
	$(GO) run ./tools/ovsplot -in docs/oversubscription/bench.json -out docs/images/oversubscription.svg

oversubscription-plot:
	$(GO) run ./tools/ovsplot -in docs/oversubscription/bench.json -out docs/images/oversubscription.svg

test-short:
	$(GO) test -short -count=1 ./...

clean:
	rm -rf bin
