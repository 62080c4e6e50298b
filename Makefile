# ShaleDB build, test and run targets. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin/shale
STATICCHECK_VERSION := v0.8.2
# Core packages that also run under the race detector in `make test`.
RACE_PKGS := ./internal/hlc/... ./internal/storage/... ./internal/docdb/... ./internal/consensus/... ./internal/tablet/... ./internal/tserver/... ./internal/master/... ./internal/server/... ./internal/metrics/... ./internal/webui/... ./internal/ysql/pgwire/...

.PHONY: all build test test-unit test-race test-long lint bench run deps proto clean

all: build

# deps installs what a fresh machine lacks: Go modules, a C compiler for
# the PostgreSQL parser (cgo), and the PostgreSQL clients the YSQL tests
# drive: psql, psycopg2, SQLAlchemy and Django (for the system python3 when
# PATH's lacks them) and the JDBC driver with a JDK; each Debian package
# only when what it provides is missing. python3-cassandra follows as its test arrives.
DEB_PKGS := postgresql-client
deps:
	@$(GO) mod download
	@pkgs=""; \
	command -v psql >/dev/null || pkgs="$$pkgs $(DEB_PKGS)"; \
	command -v gcc >/dev/null || pkgs="$$pkgs gcc"; \
	python3 -c 'import psycopg2' 2>/dev/null || /usr/bin/python3 -c 'import psycopg2' 2>/dev/null || pkgs="$$pkgs python3-psycopg2"; \
	python3 -c 'import sqlalchemy' 2>/dev/null || /usr/bin/python3 -c 'import sqlalchemy' 2>/dev/null || pkgs="$$pkgs python3-sqlalchemy"; \
	python3 -c 'import django' 2>/dev/null || /usr/bin/python3 -c 'import django' 2>/dev/null || pkgs="$$pkgs python3-django"; \
	[ -f /usr/share/java/postgresql.jar ] || pkgs="$$pkgs libpostgresql-jdbc-java"; \
	command -v javac >/dev/null || pkgs="$$pkgs default-jdk-headless"; \
	[ -z "$$pkgs" ] || { \
		SUDO=$$(command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$pkgs >/dev/null; }

build: deps
	$(GO) build -o $(BIN) ./cmd/shale

test: deps build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 25m ./...
	$(GO) test -race -short -count=1 -timeout 25m $(RACE_PKGS)

test-unit: deps
	$(GO) test -short -count=1 ./...

test-race: deps
	$(GO) test -race -count=1 -timeout 30m $(RACE_PKGS)

# test-long: soak and scale runs, not part of CI.
test-long: deps build
	SHALE_LONG=1 $(GO) test -count=1 -timeout 120m ./...

lint: deps
	@test -z "$$(gofmt -l cmd internal)" || (echo "gofmt needed:"; gofmt -l cmd internal; exit 1)
	$(GO) vet ./...
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...

# bench: the storage and replication benchmarks with fixed settings, printed
# as a table against the targets (see docs/benchmarks.md); a few minutes.
bench: deps
	GO=$(GO) ./scripts/bench.sh
	GO=$(GO) ./scripts/bench-cluster.sh

# run: builds, then starts a local 3-node RF 3 cluster in the background
# (nodes on 127.0.0.1-3, data in ./shale-data) and prints how to connect and
# stop it. A cluster left in ./shale-data by an earlier run is destroyed
# first, so every run starts fresh.
RUN_DIR := shale-data
run: build
	./$(BIN) cluster destroy --base-dir $(RUN_DIR)
	./$(BIN) cluster create --nodes 3 --rf 3 --base-dir $(RUN_DIR)

# proto regenerates the checked-in .pb.go files (installs buf and the Go
# plugins at pinned versions when missing; not needed to build).
proto:
	./scripts/genproto.sh

clean:
	rm -rf bin
