# minibroker: `make run` starts a broker on localhost:9092 (its schema registry on localhost:8081, its console on
# http://localhost:8080), `make test` installs what is missing and tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=
PYTEST_ARGS ?=
BENCH_ARGS ?= --scale
PIPELINE_ROWS ?= 100000

.PHONY: install system-deps container-deps compose-test reference-deps run cluster test lint docs docs-serve console-screenshots bench fuzz soak \
	chaos load pipeline conformance \
	clean bytecode certs \
	reference-fetch reference-record reference-diff reference-test

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@scripts/ensure-python-venv.sh $(PYTHON)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

# Debian packages the tests need (ZooKeeper, Java, Chromium and its driver); installed when running as root.
system-deps:
	@scripts/install-system-deps.sh

# The editable install writes no bytecode (nor does Python under PYTHONDONTWRITEBYTECODE), so every start
# would compile the broker's sources again (about 60 ms of its startup); pip does this for a wheel install.
bytecode: install
	@$(PY) -m compileall -q broker protocol coordinator zk > /dev/null

run: install bytecode
	$(PY) -m broker --schema-registry 127.0.0.1:8081 --console 127.0.0.1:8080 $(ARGS)

# A local cluster: ZooKeeper (Debian's package) and three brokers on localhost:9092-9094, data under
# data/cluster; Ctrl-C stops it. Broker options: make cluster ARGS="--override min.insync.replicas=2".
cluster: install system-deps bytecode
	$(PY) -m broker.testkit.cluster --brokers 3 --port 9092 --data-dir data/cluster -- $(ARGS)

# certs/: a throw-away CA (ca.pem), the broker's key and chain (broker.pem, for localhost and the compose
# service name) and a client certificate for alice, to try SSL and SASL_SSL listeners (docs/running/security.md).
certs: install
	$(PY) -m broker.testkit.security certs --host localhost --host 127.0.0.1 --host broker-secure --user alice

# Every test, the manual's strict build and its snippets (tests/docs) and the wheel installed into a fresh
# virtualenv (tests/wheel) included.
test: install system-deps
	$(PY) -m pytest $(PYTEST_ARGS) tests

# The manual (docs/, mkdocs.yml) into site/; strict: a broken link, a page missing from the nav or a reference
# that does not resolve fails the build. `make docs-serve` serves it on localhost:8000 while you edit.
docs: install
	$(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve: install
	$(VENV)/bin/mkdocs serve

# The Spark pipeline on PIPELINE_ROWS generated rows, exactly once, then its read_committed verification;
# starts a broker on 127.0.0.1:9092 unless one answers there (see docs/running/pipeline.md).
pipeline: install system-deps
	@PY=$(PY) ROWS=$(PIPELINE_ROWS) scripts/pipeline.sh

# The images and docker-compose.yml run for real (tests/containers/, docs/running/docker-compose.md): podman as
# the engine (root; installed from apt), base images made locally with mmdebstrap (cached in ~/.cache/minibroker, no
# registry), `docker run -p 9092:9092` and the compose services with clients on the host, the broker recreated on
# its volume, the pipeline service, the cluster profile with a broker killed; everything removed at the end.
container-deps:
	@scripts/install-container-deps.sh

compose-test: install system-deps container-deps
	MINIBROKER_CONTAINER_TESTS=1 $(PY) -m pytest -ra $(PYTEST_ARGS) tests/containers

# The console's pages in headless Chromium against a broker with sample data (topics, a lagging group, an open
# transaction, schema-registry payloads), saved as docs/images/console/*.png for docs/console.md.
console-screenshots: install system-deps
	$(PY) -m tests.console.screenshots docs/images/console

lint: install
	$(VENV)/bin/ruff check .

# Fuzzing: a million mutated or random requests and record batches through the decoders, then 20,000
# over sockets to a real broker (FUZZ_INPUTS, FUZZ_SOCKET_INPUTS, FUZZ_SEED to change); prints figures.
fuzz: install
	$(PY) -m tests.fuzz.run

# The crash loop: SOAK_ITERATIONS SIGKILLs under idempotent, transactional and consumer-group load, every
# acknowledgement checked after each restart; prints the counts (a 3-kill run is part of `make test`).
SOAK_ITERATIONS ?= 20
soak: install
	$(PY) -m tests.soak.crash_loop --iterations $(SOAK_ITERATIONS)

# The cluster chaos test: ZooKeeper and three brokers (replication factor 3, min.insync.replicas=2) under
# idempotent, transactional (consume-transform-produce) and consumer load; CHAOS_ROUNDS rounds of the
# CHAOS_NEMESES: kill (a broker SIGKILLed and restarted: the controller and the coordinators among them; a
# ZooKeeper session expired), partition (ZooKeeper and each broker in a network namespace of its own: a broker,
# the controller or a leader cut off, an asymmetric partition; needs root) and pause (a leader SIGSTOPped past
# its session, ZooKeeper paused); the logs checked after every round; prints the counts and the unavailability
# windows per kind (a 3-round run with partitions is part of `make test`).
CHAOS_ROUNDS ?= 20
CHAOS_NEMESES ?= kill,partition,pause
chaos: install system-deps
	$(PY) -m tests.chaos.run --rounds $(CHAOS_ROUNDS) --nemeses $(CHAOS_NEMESES)

# Load: 1,000 connections, 100 producers and 20 consumers on one broker, idle connections closed, a slow
# reader; prints the broker's memory and how fairly the clients were served.
load: install
	$(PY) -m tests.load.run

# The client libraries' own integration suites against minibroker (scripts/conformance/,
# docs/compatibility/tested.md): librdkafka v2.12.0's tests/ (built from the npm registry's node-rdkafka tarball)
# and kafka-python 3.0.12's test/integration (PyPI's sdist), cached in ~/.cache/minibroker/conformance, one suite
# after the other; a per-test table and "N passed, M failed, K skipped" each. CONFORMANCE=librdkafka|kafka-python|all;
# BOOTSTRAP=host:port runs them against a running broker, else each suite starts a fresh one (BROKERS=3: a cluster
# as `make cluster` starts; ARGS: more broker options). Too long for `make test` (about 40 minutes for both).
CONFORMANCE ?= all
BOOTSTRAP ?=
BROKERS ?= 1
KAFKA_VERSION ?= 3.9
conformance: install system-deps bytecode
	$(PY) scripts/conformance/run.py --suites $(CONFORMANCE) --bootstrap "$(BOOTSTRAP)" --brokers $(BROKERS) \
		--kafka-version $(KAFKA_VERSION) -- $(ARGS)

# Apache Kafka as the oracle (tests/reference/): pinned releases fetched with Maven into ~/.cache/minibroker
# (a second run fetches nothing), the differential scenarios recorded against Kafka (tests/reference/recorded/,
# replayed by `make test` without a JVM), or run against Kafka and minibroker live with a table of differences.
# REFERENCE_ARGS="--releases 4.1 --scenarios metadata -v" narrows a run.
REFERENCE_ARGS ?=
reference-deps:
	@scripts/install-reference-deps.sh

reference-fetch: install reference-deps
	$(PY) -m tests.reference fetch $(REFERENCE_ARGS)

reference-record: install reference-deps
	$(PY) -m tests.reference record $(REFERENCE_ARGS)

reference-diff: install reference-deps
	$(PY) -m tests.reference diff $(REFERENCE_ARGS)

# The reference brokers' own tests, clusters included (3 KRaft nodes, 3.9 on ZooKeeper, node kills).
reference-test: install reference-deps
	MINIBROKER_REFERENCE_CLUSTERS=1 $(PY) -m pytest $(PYTEST_ARGS) tests/reference

# The benchmark (benchmarks/): minibroker (grouped fdatasync and --fsync none), Tansu and Apache Kafka side by
# side, JSON and chart in benchmarks/results/.
# BENCH_ARGS="--quick" for a short run, "--scale" adds the partitions/producers scale points.
bench: $(VENV)/.bench-installed bytecode
	$(PY) -m benchmarks $(BENCH_ARGS)

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	@touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache data site
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
