# covmirror build, test and benchmark targets. `make ci` is what CI runs.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 60s
PKGS        ?= ./...

SIMTIME     ?= 10m

.PHONY: build test test-integration bench fuzz lint ci clean simulate

build:
	$(GO) build $(PKGS)

# The test command: race detector on, and the "invariants" tag re-checking
# every RangeSet's normalization after each mutation. internal/sim runs a
# few seeds of the whole-pod simulation here; make simulate runs many.
test:
	$(GO) test -race -tags invariants -timeout 30m $(PKGS)

# Tests against real servers: the SQL catalog on PostgreSQL at
# 127.0.0.1:5432, database test (COVMIRROR_TEST_POSTGRES_URL overrides it;
# .ci/postgres.sh starts one), and SeaweedFS's Iceberg REST catalog on its
# S3 gateway, which each test starts on free ports from the binary
# .ci/seaweedfs.sh builds (once, about 10 minutes; cached outside the
# repository). An unreachable server fails, never skips. The end-to-end
# pipeline test (internal/pipelinetest) embeds NATS JetStream and starts
# its own redis-server.
test-integration:
	COVMIRROR_WEED=$$(bash .ci/seaweedfs.sh) && export COVMIRROR_WEED && \
	$(GO) test -race -tags integration -run 'Postgres|SeaweedFS' -timeout 60m $(PKGS)

# Benchmarks print each measurement beside its baseline from the same run
# and the ratio between them: roaring64 for the range set, raw Pebble Sets
# (NoSync) for the local tier in each of its modes, raw iceberg-go appends for checkpoints, an iceberg-go
# scan with Go-side gaps for the DuckDB gaps query, a plain multi-row
# INSERT for a PostgreSQL checkpoint and the Iceberg table for a destination
# of a million gaps. The scale scenario (10,000 destinations, a million
# ranges) sets Resume of one partition beside a full-table read, the queries
# beside the Go planner, and a checkpoint beside a raw append, with the peak
# heap of each. The postgres benchmarks take their own run counts.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./coverage
	$(GO) test -run '^$$' -bench . -benchtime 200000x ./local
	$(GO) test -run '^$$' -bench CheckpointVsAppend -benchtime 100x ./mirror
	$(GO) test -run '^$$' -bench CommitLatencyOverTime -benchtime 1x ./mirror
	$(GO) test -run '^$$' -bench CompactionScenario -benchtime 1x ./compaction
	$(GO) test -run '^$$' -bench GapsQuery -benchtime 3x ./queries
	$(GO) test -v -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 30m ./queries
	$(GO) test -v -run '^$$' -bench SidecarRecords -benchtime 2000x ./sidecar
	$(GO) test -run '^$$' -bench 'ObjectBytesPerRange|ConcurrentWritersOneObject' -benchtime 100x ./object
	$(GO) test -tags integration -run '^$$' -bench CheckpointVsPutObject -benchtime 100x ./object
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./postgres

# The whole-pod simulation (internal/sim) on seeds from a random first one
# for SIMTIME; prints the seeds, steps and faults injected by kind, and each
# failing seed (go test ./internal/sim -seed N -v replays one).
simulate:
	$(GO) test ./internal/sim -run '^TestSimulation$$' -simtime $(SIMTIME) -timeout 0 -count=1 -v

# Each fuzz target for FUZZTIME (go test accepts one -fuzz target per run).
# FuzzQueryTextAgrees runs the printed SQL in the PostgreSQL of
# test-integration, and through psql.
fuzz:
	$(GO) test ./coverage -run '^$$' -fuzz '^FuzzRangeSet$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./local -run '^$$' -fuzz '^FuzzKeyEncoding$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./sidecar -run '^$$' -fuzz '^FuzzDecodeFastAgrees$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./postgres -run '^$$' -fuzz '^FuzzQueryTextAgrees$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags invariants $(PKGS)
	$(GO) vet -tags integration $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(STATICCHECK) -tags integration $(PKGS)

ci: lint test test-integration

clean:
	$(GO) clean -testcache
