# stateutil — the two commands a new machine needs are `make demo` and `make test`;
# both install what they need (Debian packages, Go modules, the HDFS test harness).

GO      ?= go
# Builds leave out this machine's paths (-trimpath), as make dist's must for
# the same bytes anywhere: one build cache then serves lint, the tests and
# the release binary that TestDistBinary builds.
export GOFLAGS := -trimpath $(GOFLAGS)
BIN     := bin/stateutil
FUZZTIME ?= 30s

.PHONY: all build dist deps test test-unit test-flink-matrix test-upgrade-matrix test-witness-restore hostile-trials demo bench fuzz testdata docs lint clean

all: build

deps:
	@scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) .

# One self-contained binary, RocksDB and its compression libraries linked in,
# built reproducibly, with its SHA-256: dist/stateutil-linux-amd64{,.sha256}.
dist: deps
	@scripts/dist.sh

# gofmt, go vet, staticcheck and deadcode (pinned; installed on first use).
lint: deps
	@scripts/lint.sh

# Everything, with real RocksDB, a real HDFS (MiniDFSCluster) and an
# S3-compatible server (moto, scripts/s3-start.sh), both on loopback; lint
# too, beside them (scripts/test.sh).
test: deps
	@scripts/test.sh

# Everything that needs neither Java nor HDFS nor S3; those tests skip with a message.
test-unit: lint
	$(GO) test -count=1 ./...

# The real-Flink matrices whole (make test runs one slice a day): every Flink
# minor from 1.18, every backend, snapshot kind, compression and changelog.
test-flink-matrix: deps
	@scripts/flink-matrix.sh

# The hostile trials of writes and inputs (and of serve), many rounds each,
# with their counts; make test runs a round of each. Start HDFS and S3
# first (scripts/hdfs-start.sh, scripts/s3-start.sh) to run theirs too.
hostile-trials: deps
	@scripts/hostile-trials.sh

# Every cell of the upgrade's restore matrix (make test runs one a day):
# Flink 1.18-1.20 snapshots of every kind upgraded for and restored in
# Flink 2.0-2.3.
test-upgrade-matrix: deps
	@scripts/flink-upgrade-matrix.sh

# The restore check of every witness snapshot (make test runs one a day):
# Flink goes on from each, from its rescale --parallelism 3 and from its
# convert --to flink with the same output, or stateutil refuses the copies
# as the test lists (records in flight, no key serializer recorded).
test-witness-restore: deps
	@scripts/flink-witness-restore-check.sh

demo: build
	@scripts/demo.sh $(BIN)

bench: build
	@scripts/bench.sh $(BIN)

fuzz: deps
	@scripts/fuzz.sh $(FUZZTIME)

# Regenerates the checked-in fixtures in testdata/, the golden outputs and
# the command pages of the manual.
testdata: deps
	$(GO) run ./internal/gentestdata -dir testdata
	$(GO) test ./cmd -run Golden -rewrite
	$(GO) test ./cmd -run TestDocCommandPages -rewrite
	$(GO) test ./backends/flink -run TestSerializerCoverage -rewrite-coverage

# Regenerates docs/commands (markdown and man pages) from the command tree, and
# docs/serializers.md from the serializers' own decoders and encoders.
docs: deps
	$(GO) test ./cmd -run TestDocCommandPages -rewrite
	$(GO) test ./backends/flink -run TestSerializerCoverage -rewrite-coverage

clean:
	rm -rf bin dist .cache testenv/hdfs/target
