# etl: run `make help` for the targets.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TOOLS := $(BIN)/tools
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck
# DuckDB, the tests' independent reader of the Parquet lake (etl export),
# from npm: @duckdb/node-api, whose platform package ships the binary; node
# and npm come from the system (Debian: apt-get install nodejs npm).
DUCKDB_NODE_VERSION := 1.5.6-r.1
DUCKDB := $(TOOLS)/duckdb/node_modules/@duckdb/node-api/lib/index.js
# Race-enabled tests; -count=1 so a cached pass never hides a broken server.
TESTFLAGS ?= -race -count=1 -timeout 15m

.DEFAULT_GOAL := help

.PHONY: help
help: ## show the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The local warehouse (PostgreSQL + sandbox) runs in the background, shared
# by run and psql: each starts it unless it runs and stops it when the last
# of them ends, unless `make up` keeps it. Its data is in .etl/pg, or, as
# root in a folder the OS user postgres cannot enter (under /root, a
# mktemp -d folder), in /var/lib/etl/local/NAME-HASH; `make up` says where.
.PHONY: run
run: build postgres ## run the example job on the local warehouse (local PostgreSQL + the sandbox)
	$(BIN)/etl local run --jobs jobs.yaml --job example

.PHONY: psql
psql: build postgres ## open psql on the local PostgreSQL (SQL='select ...' runs one query)
	$(BIN)/etl local psql $(if $(SQL),-- -c "$(SQL)")

.PHONY: up
up: build postgres ## keep the local warehouse running in the background; then eval "$(bin/etl local env)"
	$(BIN)/etl local up

.PHONY: down
down: build ## stop the local warehouse (the data stays)
	$(BIN)/etl local down

.PHONY: test
test: lint duckdb chromium ## gofmt, vet, staticcheck, then the race-enabled tests: about 6 minutes on 2 cores; the first run downloads staticcheck and DuckDB once (into bin/tools) and installs Chromium when missing
	$(GO) test $(TESTFLAGS) ./...
	@if [ -z "$$TEST_CITUS_URL" ]; then echo "the Citus suite did not run: TEST_CITUS_URL is unset (make test-citus runs it where Citus is installed)"; fi

# make test-citus: the Citus suite. internal/citusrun starts a coordinator
# and two workers on loopback from the Citus extension already installed
# for the machine's PostgreSQL (it says so and stops where there is none:
# no package registry serves Citus, and nothing here builds it), runs the
# tests below with TEST_CITUS_URL naming a database of that cluster, then
# stops it. With TEST_CITUS_URL, each test's database is made on every
# node and laid out by etl migrate up's Distribute (internal/pgtest): the
# tests are the plain-PostgreSQL tests of each command, run again there.
# CITUS_RUN picks tests, CITUS_PKGS packages.
CITUS_PKGS ?= ./internal/pgcluster ./internal/runs ./load ./pipeline ./report ./export ./push ./auth ./budget ./cmd/etl
CITUS_RUN ?= $(shell sed -e '/^\#/d' -e '/^$$/d' internal/citusrun/tests.txt | paste -sd'|')
.PHONY: test-citus
test-citus: ## the Citus suite, on a coordinator and two workers it starts from an installed Citus (docs/warehouse.md, On Citus)
	$(GO) run ./internal/citusrun $(GO) test -count=1 -timeout 45m -run '^($(CITUS_RUN))$$' $(CITUS_PKGS)

# make report: the example job's report, from the data make run loaded, on
# the local warehouse (started for it, and stopped again unless make up
# keeps it running). REPORT=FILE writes it elsewhere.
REPORT ?= report.html
.PHONY: report
report: run ## run the example job, then write its HTML report (REPORT=report.html) and say where
	@running=; if $(BIN)/etl local env >/dev/null 2>&1; then running=1; else $(BIN)/etl --log-level warn local up >/dev/null || exit 1; fi; \
	eval "$$($(BIN)/etl local env)" && $(BIN)/etl report --jobs jobs.yaml --job example --out "$(REPORT)"; rc=$$?; \
	if [ -z "$$running" ]; then $(BIN)/etl --log-level warn local down >/dev/null; fi; \
	if [ $$rc = 0 ]; then echo "open $(abspath $(REPORT)) in a browser: it works offline"; fi; exit $$rc

# make screenshot: docs/report.png, the charts of the largest target of the
# report the Chromium test opens (TestReportInChromium), as the README shows.
.PHONY: screenshot
screenshot: postgres chromium ## regenerate docs/report.png, the report's screenshot in the README, with headless Chromium
	$(GO) test -count=1 -run '^TestReportInChromium$$' ./report -screenshot=$(CURDIR)/docs/report.png

.PHONY: lint
lint: postgres $(STATICCHECK) ## gofmt, go vet and staticcheck
	@unformatted="$$("$$($(GO) env GOROOT)/bin/gofmt" -l .)"; if [ -n "$$unformatted" ]; then echo "not gofmt'ed (run gofmt -w):"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

# make bench: the pipeline side by side with psql's COPY on the same CSV
# (arms B0 B1 B2 P1 P1u E2E) against one throwaway PostgreSQL, and its peak
# RSS at N and 4N rows, the cost of history (arms H and HB), and etl export
# of N and 4N links to Parquet (arm X: rows/s, peak RSS, bytes per row);
# prints a table and writes bench/results.json.
# BENCH_ROWS (N, 1000000), BENCH_LIMIT (page size, 10000), BENCH_REPS (3),
# BENCH_RSS4=0 (skip the 4N run), BENCH_ARMS=B2,P1 (a subset),
# BENCH_HISTORY_ROWS (arm H's links, 100000), BENCH_HISTORY_FILL (the links
# of each of H's 119 older months, BENCH_HISTORY_ROWS),
# BENCH_PROFILE=DIR (CPU and allocation profiles of P1 and P1u); see
# bench/main.go. A command-line variable reaches its environment too.
.PHONY: bench
bench: build postgres ## psql COPY vs the pipeline on the same bytes, peak RSS at N and 4N rows (BENCH_ROWS=N); writes bench/results.json
	$(GO) build -o $(BIN)/bench ./bench
	$(BIN)/bench -etl $(BIN)/etl -out bench/results.json

# make bench-go BENCH=RunLinksPeakRSS BENCH_ROWS=4000000: one benchmark, with
# 4M links (a command-line variable reaches the tests' environment).
BENCH ?= .
BENCHFLAGS ?= -benchmem -timeout 30m
.PHONY: bench-go
bench-go: build postgres ## the Go benchmarks (BENCH=regexp picks some; BENCH_ROWS=N links for RunLinksPeakRSS)
	$(GO) test -run '^$$' -bench '$(BENCH)' $(BENCHFLAGS) ./...

.PHONY: build
build: ## build bin/etl
	$(GO) build -o $(BIN)/etl ./cmd/etl

# make install copies bin/etl to $(PREFIX)/bin: /usr/local/bin when that is
# writable (as root), else ~/.local/bin; PREFIX=DIR picks another. It says
# where, and whether that folder is on the PATH.
PREFIX ?= $(if $(shell test -w /usr/local/bin && echo y),/usr/local,$(HOME)/.local)
.PHONY: install
install: build ## put etl on the PATH: copies bin/etl to /usr/local/bin, or ~/.local/bin when that is not writable (PREFIX=DIR)
	@install -d "$(PREFIX)/bin" && install -m 0755 $(BIN)/etl "$(PREFIX)/bin/etl"
	@echo "installed $(PREFIX)/bin/etl"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "$(PREFIX)/bin is not on your PATH: add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: duckdb
duckdb: $(DUCKDB) ## install DuckDB's node package (pinned) into bin/tools/duckdb: the tests read the Parquet lake with it

$(DUCKDB):
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing node and npm (apt-get install nodejs npm): the tests read etl export's Parquet with DuckDB through node"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
		else \
			echo "node and npm are missing: the tests read etl export's Parquet with DuckDB through node (Debian: apt-get install nodejs npm)"; exit 1; \
		fi; \
	fi
	npm install --prefix $(TOOLS)/duckdb --no-audit --no-fund --loglevel=error @duckdb/node-api@$(DUCKDB_NODE_VERSION)

# The tests and `make run` start their own PostgreSQL from the server
# binaries; install them when they are missing (Debian, as root).
.PHONY: postgres
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing the PostgreSQL server binaries (apt-get install postgresql)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
		else \
			echo "PostgreSQL server binaries (initdb, postgres) are missing: install postgresql, or set TEST_DATABASE_URL / DATABASE_URL"; exit 1; \
		fi; \
	fi

# The report's test opens it in headless Chromium (Debian's chromium);
# install it when it is missing (Debian, as root).
.PHONY: chromium
chromium:
	@if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing Chromium for the report's browser test (apt-get install chromium)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else \
			echo "Chromium is missing: the report's test (TestReportInChromium) opens the report in it; install chromium (Debian: apt-get install chromium)"; exit 1; \
		fi; \
	fi

# clean builds etl to run `etl local clean`: the data may live outside the
# checkout, and the warehouse may be running.
.PHONY: clean
clean: ## stop the local warehouse, delete its data (wherever it lives) and the build output
	@if $(GO) build -o $(BIN)/etl ./cmd/etl; then $(BIN)/etl local clean; \
	else echo "etl does not build: stop the local warehouse and delete its data by hand (see docs/local-and-sandbox.md)"; exit 1; fi
	rm -rf $(BIN) .etl
