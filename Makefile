# streamseal: `make demo` runs the main job, `make test` runs every test.
GO ?= go
SQL_SUITES = $(shell find tests/sqltests -name '*.test.sql' | sort)

.PHONY: test vet gotest fuzz sqltest demo bench build chaos

test: vet gotest fuzz sqltest

vet:
	$(GO) vet ./...

# -race everywhere: the stamper, the test harness and later the wire are concurrent.
gotest:
	$(GO) test -race -count=1 ./...

# The fault suite at full size (internal/chaos): real processes (streamseal run built with
# -tags chaos, an external nats-server built from the module proxy, a PostgreSQL cluster per
# service) under kill -9, broker and database crashes, deleted copies, duplicate and reordered
# deliveries; ends with the figures table. gotest runs its short form (cases a, b, c, h, smaller).
chaos:
	$(GO) test -count=1 -timeout 60m -v -run '^TestFaultSuite$$' ./internal/chaos/ -args -chaos.long

# A short fuzzing budget for the wire's envelope and beat decoders, for the door (append and ingest
# through the SQL API, against a real database) and for the feed's token decoder (read_feed, same
# database) on every run. Budgets are execution counts, not
# durations: Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a failure
# ("context deadline exceeded", no input written) when a starved worker is mid-execution at the
# deadline (go.dev/issue/75804, fixed in 1.27); a count has no deadline to race. The counts are
# about 10 s of work each on an idle machine here.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30000x -fuzzminimizetime 100x ./controlplane/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBeat$$' -fuzztime 10000x -fuzzminimizetime 100x ./controlplane/wire/
	$(GO) test -run '^$$' -fuzz FuzzDoor -fuzztime 5000x -fuzzminimizetime 100x -parallel 1 ./controlplane/store/
	$(GO) test -run '^$$' -fuzz FuzzFeedToken -fuzztime 5000x -fuzzminimizetime 100x -parallel 1 ./feed/

# pgTAP suites against a fresh, fully migrated database on a throwaway cluster.
sqltest:
	$(GO) run ./internal/tools/withpg -- pg_prove --failures $(SQL_SUITES)

demo:
	$(GO) run ./cmd/streamseal demo

bench:
	$(GO) run ./cmd/streamseal bench write

build:
	$(GO) build -o bin/streamseal ./cmd/streamseal
