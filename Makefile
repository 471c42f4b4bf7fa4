# stateutil — the two commands a new machine needs are `make demo` and `make test`;
# both install what they need (Debian packages, Go modules, the HDFS test harness).

GO      ?= go
BIN     := bin/stateutil
FUZZTIME ?= 30s

.PHONY: all build deps test test-unit test-flink-matrix test-upgrade-matrix demo bench fuzz testdata lint clean

all: build

deps:
	@scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) .

# gofmt, go vet, staticcheck and deadcode (pinned; installed on first use).
lint: deps
	@scripts/lint.sh

# Everything, with real RocksDB, a real HDFS (MiniDFSCluster) and an
# S3-compatible server (moto, scripts/s3-start.sh), both on loopback.
test: lint
	@scripts/test.sh

# Everything that needs neither Java nor HDFS nor S3; those tests skip with a message.
test-unit: lint
	$(GO) test -count=1 ./...

# The real-Flink matrices whole (make test runs one slice a day): every Flink
# minor from 1.18, every backend, snapshot kind, compression and changelog.
test-flink-matrix: deps
	@scripts/flink-matrix.sh

# Every cell of the upgrade's restore matrix (make test runs one a day):
# Flink 1.18-1.20 snapshots of every kind upgraded for and restored in
# Flink 2.0-2.3.
test-upgrade-matrix: deps
	@scripts/flink-upgrade-matrix.sh

demo: build
	@scripts/demo.sh $(BIN)

bench: build
	@scripts/bench.sh $(BIN)

fuzz: deps
	@scripts/fuzz.sh $(FUZZTIME)

# Regenerates the checked-in fixtures in testdata/ and the golden outputs.
testdata: deps
	$(GO) run ./internal/gentestdata -dir testdata
	$(GO) test ./cmd -run Golden -rewrite

clean:
	rm -rf bin .cache testenv/hdfs/target
