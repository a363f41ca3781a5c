# covmirror's build, test and benchmark targets. A bare `make` lists them
# (make help); `make ci` is what CI runs (.ci/run). docs/development.md
# says what each needs.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 60s
PKGS        ?= ./...

SIMTIME     ?= 10m

.DEFAULT_GOAL := help

.PHONY: help build test test-slow test-integration rewrite bench bench-fleet fuzz lint ci clean simulate chart chart-example \
	licenses licenses-update release release-check image image-check

# Each target's line below is its `##` comment.
help: ## list the targets with what each does
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-17s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## compile every package
	$(GO) build $(PKGS)

# The quick suite, the one to run often: race detector on, and the
# "invariants" tag re-checking every RangeSet's normalization after each
# mutation. It runs every package's tests, but -short leaves out or
# shortens what is slow and rarely broken: the scale scenario, the
# 10,000-destination map, serve's SIGKILL test and the two-process
# checkpoint test on the table are skipped; the process-kill loops run 5
# to 10 kills instead of 20 to 50, the local tier's fault model two runs
# instead of four, the simulation seeds 1 and 2 instead of 1 to 4. It took
# 7 min 22 s on 2 cores once built; test-slow takes roughly half again
# (lint, test-slow and test-integration together took 20 to 24 minutes in
# CI). The first run on a fresh machine builds everything with -race first,
# which takes minutes more.
test: ## the quick suite (-short -race -tags invariants): what a developer runs often
	$(GO) test -short -race -tags invariants -timeout 30m $(PKGS)

# The whole suite without -short: everything `make test` runs, and the
# slow tests at their full counts. make ci runs it.
test-slow: ## the whole suite, slow tests included (what make ci runs)
	$(GO) test -race -tags invariants -timeout 60m $(PKGS)

# Tests against real servers: the SQL catalog on PostgreSQL at
# 127.0.0.1:5432, database test (COVMIRROR_TEST_POSTGRES_URL overrides it;
# .ci/postgres.sh starts one), and SeaweedFS's Iceberg REST catalog on its
# S3 gateway, which each test starts on free ports from the binary
# .ci/seaweedfs.sh builds (once, about 10 minutes; cached outside the
# repository). An unreachable server fails, never skips. The end-to-end
# pipeline test (internal/pipelinetest) embeds NATS JetStream and starts
# its own redis-server. reconcile's sink-table tests also run on MariaDB at
# 127.0.0.1:3306, user root, database test (COVMIRROR_TEST_MYSQL_DSN
# overrides it; .ci/mariadb.sh starts one).
test-integration: ## tests against real servers: PostgreSQL, MariaDB, SeaweedFS, the NATS/Redis pipeline
	COVMIRROR_WEED=$$(bash .ci/seaweedfs.sh) && export COVMIRROR_WEED && \
	$(GO) test -race -tags integration -run 'Postgres|SeaweedFS|MySQL' -timeout 60m $(PKGS)

# Benchmarks print each measurement beside its baseline from the same run
# and the ratio between them: roaring64 for the range set, raw Pebble Sets
# (NoSync) for the local tier in each of its modes, raw iceberg-go appends for checkpoints, an iceberg-go
# scan with Go-side gaps for the DuckDB gaps query, a plain multi-row
# INSERT for a PostgreSQL checkpoint and the Iceberg table for a destination
# of a million gaps. The scale scenario (10,000 destinations, a million
# ranges) sets Resume of one partition beside a full-table read, the queries
# beside the Go planner, and a checkpoint beside a raw append, with the peak
# heap of each. The Benthos stream through the covmirror output is measured
# beside the same stream without it. N pods checkpointing into one table,
# on the SQLite catalog and on SeaweedFS's REST catalog (which needs
# .ci/seaweedfs.sh's build), run beside the same pods on the object tier
# (-pods 1,4,16,64 on the go test line measures more pods); the startup of
# covmirror and covmirror-lite beside a program that only prints. The
# postgres benchmarks take their own run counts. The readers (gaps and plan
# of one partition and of everything, 500,000 destinations) run beside the
# former plan-everything-then-filter at 100,000. Last, bench-fleet: a
# fleet of up to 1,000 pods on each durable tier (docs/scale.md).
bench: ## benchmarks beside their baselines, and the scale scenario (docs/scale.md)
	$(GO) test -run '^$$' -bench . -benchtime 3x ./coverage
	$(GO) test -run '^$$' -bench . -benchtime 200000x ./local
	$(GO) test -run '^$$' -bench CheckpointVsAppend -benchtime 100x ./mirror
	$(GO) test -run '^$$' -bench CommitLatencyOverTime -benchtime 1x ./mirror
	$(GO) test -run '^$$' -bench PodsOneTable -benchtime 1x ./mirror
	$(GO) test -tags integration -run '^$$' -bench PodsOneRESTTable -benchtime 1x ./mirror
	$(GO) test -run '^$$' -bench CompactionScenario -benchtime 1x ./compaction
	$(GO) test -run '^$$' -bench GapsQuery -benchtime 3x ./queries
	$(GO) test -run '^$$' -bench GapDating -benchtime 1x ./recovery
	$(GO) test -run '^$$' -bench Readers -benchtime 2x -timeout 20m ./recovery
	$(GO) test -v -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 30m ./queries
	$(GO) test -v -run '^$$' -bench SidecarRecords -benchtime 2000x ./sidecar
	$(GO) test -v -run '^$$' -bench OutputOverhead -benchtime 3x ./benthos
	$(GO) test -run '^$$' -bench 'ObjectBytesPerRange|ConcurrentWritersOneObject' -benchtime 100x ./object
	$(GO) test -run '^$$' -bench PositionBytesPerCheckpoint -benchtime 3x ./object
	$(GO) test -tags integration -run '^$$' -bench CheckpointVsPutObject -benchtime 100x ./object
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./postgres
	$(GO) test -run '^$$' -bench Startup -benchtime 20x ./cmd/covmirror
	$(MAKE) bench-fleet

# The fleet benchmark (internal/fleetbench on internal/fleetsim): 500 and
# 1,000 pods checkpointing into one durable tier, on a simulated S3 and a
# simulated catalog commit in fake time (synctest), and 500 on the
# PostgreSQL at 127.0.0.1:5432 in real time, each scenario in a process of
# its own beside one pod on today's object tier. About 4 minutes on 2
# cores, most of it PostgreSQL's; FLEET=name,name runs only those.
FLEET ?=
bench-fleet: ## a fleet of pods on each durable tier beside one pod (docs/scale.md)
	$(GO) test -v -run '^$$' -bench '^BenchmarkFleet$$' -benchtime 1x -timeout 30m ./internal/fleetbench -fleet '$(FLEET)'

# The whole-pod simulation (internal/sim) on seeds from a random first one
# for SIMTIME; prints the seeds, steps and faults injected by kind, and each
# failing seed (go test ./internal/sim -run TestSimulation -seed N -v
# replays one).
simulate: ## the whole-pod simulation on fresh seeds for SIMTIME (default 10m)
	$(GO) test ./internal/sim -run '^TestSimulation$$' -simtime $(SIMTIME) -timeout 0 -count=1 -v

# Each fuzz target for FUZZTIME (go test accepts one -fuzz target per run).
# FuzzQueryTextAgrees runs the printed SQL in the PostgreSQL of
# test-integration, and through psql.
fuzz: ## each fuzz target for FUZZTIME (default 60s)
	$(GO) test ./coverage -run '^$$' -fuzz '^FuzzRangeSet$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./local -run '^$$' -fuzz '^FuzzKeyEncoding$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./sidecar -run '^$$' -fuzz '^FuzzDecodeFastAgrees$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./postgres -run '^$$' -fuzz '^FuzzQueryTextAgrees$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s

# gofmt, go vet (also without cgo) and staticcheck, with and without the build tags.
lint: ## gofmt check, go vet (also without cgo) and staticcheck, with and without the build tags
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags invariants $(PKGS)
	$(GO) vet -tags integration $(PKGS)
	# Without cgo (no DuckDB) the binary builds from other files: the serve
	# process tests build it so.
	CGO_ENABLED=0 $(GO) vet ./cmd/covmirror
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(STATICCHECK) -tags integration $(PKGS)
	$(MAKE) licenses

# The licence of every module the three binaries link (linux/amd64, built
# as make release builds them), from their SBOMs (cyclonedx-gomod's
# licence detection), checked against internal/licenses' allow list of
# licences compatible with Apache-2.0, and docs/third-party-licenses.md
# checked to be current. An unknown or refused licence fails.
LICENSE_BUILD = $(CURDIR)/dist/licenses
licenses: ## check the licences of every linked module (allow list) and that the report is current
	rm -rf $(LICENSE_BUILD)
	bash .ci/release.sh build $(LICENSE_BUILD) $$($(GO) env GOOS)/$$($(GO) env GOARCH)
	bash .ci/release.sh sbom $(LICENSE_BUILD)
	$(GO) run ./internal/licenses -check docs/third-party-licenses.md $(LICENSE_BUILD)/*.cdx.json

licenses-update: ## regenerate docs/third-party-licenses.md (review the diff)
	rm -rf $(LICENSE_BUILD)
	bash .ci/release.sh build $(LICENSE_BUILD) $$($(GO) env GOOS)/$$($(GO) env GOARCH)
	bash .ci/release.sh sbom $(LICENSE_BUILD)
	$(GO) run ./internal/licenses -write docs/third-party-licenses.md $(LICENSE_BUILD)/*.cdx.json

# Reproducible binaries into dist/: covmirror for this machine (it links
# DuckDB through cgo), covmirror-lite and covmirror-benthos for every
# PLATFORMS entry (pure Go), each with a CycloneDX SBOM, all in
# dist/SHA256SUMS; VERSION defaults to the tag on HEAD, else v0.0.0-dev.
# docs/release.md says how a release is cut.
release: ## reproducible binaries, SBOMs and SHA256SUMS into dist/ (docs/release.md)
	rm -rf dist/release
	bash .ci/release.sh build dist/release
	bash .ci/release.sh sbom dist/release
	$(GO) run ./internal/licenses dist/release/*.cdx.json
	bash .ci/release.sh sums dist/release
	@cat dist/release/SHA256SUMS

# Two builds of HEAD for this machine's platform, from two copies at two
# paths, must give the same checksums.
release-check: ## build HEAD twice and compare the checksums (reproducible builds)
	bash .ci/release.sh check

# The container image, offline: an OCI archive of covmirror for
# linux/amd64 with the libraries it links, a non-root user and CA
# certificates (internal/image).
image: ## the container image as an OCI archive: dist/covmirror-image.tar
	rm -rf dist/image-bin dist/covmirror-image.tar
	bash .ci/release.sh build dist/image-bin linux/amd64
	$(GO) run ./internal/image -binary dist/image-bin/covmirror-linux-amd64 \
		-version $$(bash .ci/release.sh version) -commit $$(git rev-parse HEAD) \
		-date $$(bash .ci/release.sh date) -out dist/covmirror-image.tar

# The image's entrypoint run in an otherwise empty root (chroot, as the
# image's user): version, demo and serve answering over HTTP. Needs root.
image-check: image ## run the image's version, demo and serve in an empty root (needs root)
	COVMIRROR_IMAGE=$(CURDIR)/dist/covmirror-image.tar COVMIRROR_IMAGE_VERSION=$$(bash .ci/release.sh version) \
		$(GO) test ./internal/image -run TestImageRuns -count=1 -v

# Every datadriven file regenerated from what the code prints now: the
# range-set spec, the CLI transcripts and the gap spec
# (internal/gapspec/testdata/gaps), whose expected text the Go planner
# writes and the DuckDB and PostgreSQL queries must then print too.
# Review the diff before committing.
rewrite: ## regenerate every datadriven file (review the diff)
	$(GO) test ./coverage -run DataDriven -rewrite
	$(GO) test ./cmd/covmirror -run Transcripts -rewrite
	$(GO) test ./recovery -run GapSpec -rewrite
	$(GO) test -count=1 ./queries ./postgres -run GapSpec

# The Helm chart (deploy/helm/covmirror) offline: internal/charttest runs
# Helm's linter and renderer (its Go library, the same code as helm lint
# and helm template) over every values file under ci/, decodes each
# rendered object strictly into the Kubernetes API's types and checks it
# as a cluster would; test-slow runs it too. Helm and the Kubernetes
# modules are linked into that test only, never into a binary.
chart: ## lint and render the Helm chart over its example values, checking every object
	$(GO) test -count=1 ./internal/charttest

# deploy/pod.yaml is the chart's rendered example (ci/pod-values.yaml):
# regenerate it after changing the chart, and review the diff.
chart-example: ## regenerate deploy/pod.yaml from the Helm chart (review the diff)
	$(GO) test ./internal/charttest -run '^TestPodExample$$' -rewrite

ci: lint test-slow test-integration release-check image-check ## lint (with licenses), test-slow, test-integration, release-check, image-check: what .ci/run runs

clean: ## empty the test cache
	$(GO) clean -testcache
