# Everything a newcomer or CI needs: `make demo`, `make test`. Each target installs what it uses.
SHELL := /bin/bash
.DEFAULT_GOAL := help

find_python = $(firstword $(foreach p,$(shell command -v python$(1) 2>/dev/null) $(wildcard $(shell pyenv root 2>/dev/null)/versions/$(1)*/bin/python$(1)) $(wildcard /usr/bin/python$(1) /usr/local/bin/python$(1)),$(if $(shell $(p) -c 'print(1)' 2>/dev/null),$(p))))
PYTHON ?= $(or $(call find_python,3.11),$(call find_python,3.12),python3)
PYTHON_DJANGO6 ?= $(or $(call find_python,3.12),$(call find_python,3.13))

VENV := .venv
VENV6 := .venv-django6
PG_URL ?= postgres://postgres@127.0.0.1:5432/turnstate
MARIADB_URL ?= mysql://root@127.0.0.1:3306/turnstate
PYTEST_ARGS ?=

.PHONY: test-demos test-sqlite-memory test-postgres-pool test-django6-postgres-pool test-postgres-prepared test-postgres-psycopg2 docs gettext demo-langgraph demo-pydantic-ai demo-openai-agents demo-google-adk dist soak soak-workers redis mariadb-headers browser test-e2e screenshot help install test test-sqlite test-postgres test-mariadb test-django6 test-django6-sqlite test-django6-postgres test-races lint demo bench clean

help:
	@echo "make demo          run the example end to end on SQLite"
	@echo "make demo-langgraph a LangGraph graph paused, answered over HTTP, continued by a worker"
	@echo "make demo-pydantic-ai  a PydanticAI run's question and approval, answered over HTTP, continued once"
	@echo "make demo-openai-agents  an OpenAI Agents SDK run's two approvals, answered over HTTP, continued once"
	@echo "make demo-google-adk  a Google ADK invocation's two confirmations (one with a payload), answered over HTTP, continued once"
	@echo "make test          the suite on SQLite and on PostgreSQL, both at once"
	@echo "make test-demos    every demo and README quickstart end to end, each in processes of its own (SQLite)"
	@echo "make test-mariadb  the suite on MariaDB"
	@echo "make test-sqlite-memory  the LangGraph bridge tests on Django's in-memory test database, 20 times"
	@echo "make test-django6  the suite with Django 6 on Python 3.12"
	@echo "make test-races    timing-only races, repeated, on SQLite, PostgreSQL and MariaDB (not gating)"
	@echo "make test-e2e      the admin and the built site (make docs first) in headless Chromium (installs chromium with apt)"
	@echo "make screenshot    docs/img/admin-*.png (1440 and 1024 px) and site-*.png (1440 px), one browser run"
	@echo "make lint          ruff, import layers (lint-imports), mypy"
	@echo "make bench         benchmarks (bench/)"
	@echo "make dist          wheel and sdist in dist/, checked with twine"
	@echo "make docs          the documentation site in site/, built strictly (mkdocs build --strict)"
	@echo "make soak          8 processes answering over HTTP on PostgreSQL (SOAK_MINUTES=5)"
	@echo "make soak-workers  continuations on 1, 2, 4 RQ and database workers, one killed (SOAK_PAUSES=2000)"

$(VENV)/.installed: pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[test,demo,encryption,langgraph,langgraph-agents,pydantic-ai,openai-agents,google-adk,rq]' 'django-tasks-db[compat]' 'Django>=5.2,<6'
	@touch $@

install: $(VENV)/.installed | gettext

# The two legs at once, one per core (much of each leg waits on its database); each leg's output
# is printed whole when it ends.
test:
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-sqlite test-postgres

test-sqlite: install
	DATABASE_URL= $(VENV)/bin/pytest $(PYTEST_ARGS)

# The demos and the README's quickstarts, end to end: each starts its own server and worker on a
# SQLite file of its own, so they run once, here (CI runs this target; `make test` leaves them out).
test-demos: install
	DATABASE_URL= $(VENV)/bin/pytest -m demo $(PYTEST_ARGS)

# The LangGraph bridge tests on Django's default test database (SQLite in memory, shared cache:
# tests/settings_memory.py), as a host's own suite runs them; repeated, since a lock between two
# threads' connections failed them only now and then. The two tests that spawn processes need a
# database other processes can open, which an in-memory one is not.
MEMORY_REPEAT ?= 20
MEMORY_TESTS := tests/in_memory_bridge.py tests/contrib/langgraph/test_bridge.py \
	tests/contrib/langgraph/test_bridge_async.py tests/contrib/langgraph/test_hitl.py \
	tests/contrib/langgraph/test_graphs.py

test-sqlite-memory: install
	DJANGO_SETTINGS_MODULE=tests.settings_memory DATABASE_URL= $(VENV)/bin/pytest -q --keep-duplicates \
		-k "not two_processes" $(foreach _,$(shell seq $(MEMORY_REPEAT)),$(MEMORY_TESTS)) $(PYTEST_ARGS)

test-postgres: install | redis
	@$(VENV)/bin/python -c "import psycopg; psycopg.connect('$(PG_URL)'.rsplit('/',1)[0] + '/postgres')" \
		|| { echo "PostgreSQL is not reachable at $(PG_URL)"; exit 1; }
	DATABASE_URL=$(PG_URL) $(VENV)/bin/pytest $(PYTEST_ARGS)

# Not in `make test`: the PostgreSQL suite on Django's own connection pool (CI runs it on Django 6,
# test-django6-postgres-pool), and with the prepared-statement OPTIONS the docs recommend; every
# statement is Django's either way.
test-postgres-pool: install | redis
	DATABASE_URL=$(PG_URL) TEST_DB_SUFFIX=_pool DATABASE_OPTIONS='{"pool": true}' $(VENV)/bin/pytest $(PYTEST_ARGS)

# CI: Django 6 on PostgreSQL through Django's connection pool, the pairing CI runs beside
# `make test`'s Django 5.2 on PostgreSQL without one (one PostgreSQL leg fewer than every pairing).
test-django6-postgres-pool: $(VENV6)/.installed | gettext redis
	$(VENV6)/bin/python -c "import django; print('Django', django.get_version())"
	DATABASE_URL=$(PG_URL) TEST_DB_SUFFIX=_pool DATABASE_OPTIONS='{"pool": true}' $(VENV6)/bin/pytest $(PYTEST_ARGS)

test-postgres-prepared: install | redis
	DATABASE_URL=$(PG_URL) TEST_DB_SUFFIX=_prepared \
		DATABASE_OPTIONS='{"server_side_binding": true, "prepare_threshold": 5}' $(VENV)/bin/pytest $(PYTEST_ARGS)

# CI only: the PostgreSQL suite with psycopg2 as the driver (Django takes psycopg 3 when it is
# importable, so this venv has psycopg2 alone).
VENV_PSYCOPG2 := .venv-psycopg2

$(VENV_PSYCOPG2)/.installed: pyproject.toml
	@test -x $(VENV_PSYCOPG2)/bin/python || $(PYTHON) -m venv $(VENV_PSYCOPG2)
	$(VENV_PSYCOPG2)/bin/python -m pip install -q --upgrade pip
	$(VENV_PSYCOPG2)/bin/python -m pip install -q -e '.[test,langgraph,langgraph-agents,pydantic-ai,openai-agents,google-adk,rq]' \
		'django-tasks-db[compat]' 'Django>=5.2,<6' psycopg2-binary
	$(VENV_PSYCOPG2)/bin/python -m pip uninstall -y -q psycopg psycopg-binary psycopg-pool \
		opentelemetry-instrumentation-psycopg
	@touch $@

test-postgres-psycopg2: $(VENV_PSYCOPG2)/.installed | gettext redis
	DATABASE_URL=$(PG_URL) TEST_DB_SUFFIX=_psycopg2 $(VENV_PSYCOPG2)/bin/pytest $(PYTEST_ARGS)

mariadb-headers:
	@dpkg -s libmariadb-dev pkg-config >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q libmariadb-dev pkg-config; }

$(VENV)/.installed-mysql: $(VENV)/.installed | mariadb-headers
	$(VENV)/bin/python -m pip install -q -e '.[test,langgraph,langgraph-agents,pydantic-ai,openai-agents,google-adk,mysql]'
	@touch $@

test-mariadb: $(VENV)/.installed-mysql
	DATABASE_URL=$(MARIADB_URL) $(VENV)/bin/pytest $(PYTEST_ARGS)

$(VENV6)/.installed: pyproject.toml
	@test -n "$(PYTHON_DJANGO6)" || { echo "Django 6 needs Python >= 3.12; none found (set PYTHON_DJANGO6)"; exit 1; }
	@test -x $(VENV6)/bin/python || $(PYTHON_DJANGO6) -m venv $(VENV6)
	$(VENV6)/bin/python -m pip install -q --upgrade pip
	$(VENV6)/bin/python -m pip install -q -e '.[test,demo,langgraph,langgraph-agents,pydantic-ai,openai-agents,google-adk,rq]' 'Django>=6,<7'
	@touch $@

test-django6: test-django6-sqlite test-django6-postgres

test-django6-sqlite: $(VENV6)/.installed | gettext
	$(VENV6)/bin/python -c "import django; print('Django', django.get_version())"
	DATABASE_URL= $(VENV6)/bin/pytest $(PYTEST_ARGS)

test-django6-postgres: $(VENV6)/.installed | gettext redis
	$(VENV6)/bin/python -c "import django; print('Django', django.get_version())"
	DATABASE_URL=$(PG_URL) $(VENV6)/bin/pytest $(PYTEST_ARGS)

# Timing-only races: many unforced repetitions. Not gating, and not in .ci/run.
test-races: $(VENV)/.installed-mysql
	DATABASE_URL= $(VENV)/bin/pytest -m races tests/test_races.py $(PYTEST_ARGS)
	DATABASE_URL=$(PG_URL) $(VENV)/bin/pytest -m races tests/test_races.py $(PYTEST_ARGS)
	DATABASE_URL=$(MARIADB_URL) $(VENV)/bin/pytest -m races tests/test_races.py $(PYTEST_ARGS)

# Debian's Chromium and its driver, from apt: Selenium Manager never downloads a browser here.
browser:
	@dpkg -s chromium chromium-driver >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q chromium chromium-driver; }

$(VENV)/.installed-e2e: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e '.[test,langgraph,pydantic-ai,openai-agents,google-adk,e2e]'
	@touch $@

# The site first (make docs, strictly): tests/test_docs_e2e.py reads it, and in CI (CI=true) a
# missing site fails those tests rather than skipping them.
test-e2e: $(VENV)/.installed-e2e docs | browser
	SE_OFFLINE=true DATABASE_URL= $(VENV)/bin/pytest -m e2e $(PYTEST_ARGS)

screenshot: $(VENV)/.installed-e2e docs | browser
	mkdir -p docs/img
	SE_OFFLINE=true DATABASE_URL= TURNSTATE_SCREENSHOTS=docs/img \
		$(VENV)/bin/pytest -q -m e2e tests/test_admin_e2e.py tests/test_docs_e2e.py tests/test_pages_e2e.py

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy turnstate_app tests $(wildcard bench/*.py)

demo: install
	$(VENV)/bin/python example_project/demo.py --database-url "$(DATABASE_URL)"

demo-langgraph: install
	$(VENV)/bin/python example_project/demo_langgraph.py --database-url "$(DATABASE_URL)"

demo-pydantic-ai: install
	$(VENV)/bin/python example_project/demo_pydantic_ai.py --database-url "$(DATABASE_URL)"

demo-openai-agents: install
	$(VENV)/bin/python example_project/demo_openai_agents.py --database-url "$(DATABASE_URL)"

demo-google-adk: install
	$(VENV)/bin/python example_project/demo_google_adk.py --database-url "$(DATABASE_URL)"

# Each PostgreSQL benchmark uses a database of its own on $(PG_URL)'s server (created when missing).
BENCH_PG ?= $(dir $(PG_URL))

$(VENV)/.installed-bench: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e '.[test,demo,langgraph,pydantic-ai,openai-agents,google-adk,bench]' 'Django>=5.2,<6'
	@touch $@

bench: $(VENV)/.installed-bench
	$(VENV)/bin/python bench/port.py --database sqlite
	$(VENV)/bin/python bench/port.py --database $(BENCH_PG)turnstate_bench
	$(VENV)/bin/python bench/lifecycle.py --database sqlite
	$(VENV)/bin/python bench/lifecycle.py --database $(BENCH_PG)turnstate_bench_lc
	$(VENV)/bin/python bench/langgraph.py --database $(BENCH_PG)turnstate_bench_lg
	$(VENV)/bin/python bench/langgraph_saver.py --database sqlite
	$(VENV)/bin/python bench/langgraph_saver.py --database $(BENCH_PG)turnstate_bench_lgs
	$(VENV)/bin/python bench/conversation_store.py --database sqlite
	$(VENV)/bin/python bench/conversation_store.py --database $(BENCH_PG)turnstate_bench_cs
	$(VENV)/bin/python bench/concurrency.py --database $(BENCH_PG)turnstate_bench_cc
	$(VENV)/bin/python bench/openai_agents.py --database sqlite
	$(VENV)/bin/python bench/openai_agents.py --database $(BENCH_PG)turnstate_bench_oai
	$(VENV)/bin/python bench/startup.py
	$(VENV)/bin/python bench/google_adk_sessions.py --database sqlite
	$(VENV)/bin/python bench/google_adk_sessions.py --database $(BENCH_PG)turnstate_bench_adk
	$(VENV)/bin/python bench/ops.py --database $(BENCH_PG)turnstate_bench_ops

# Not gating: 8 processes minting and answering over HTTP against PostgreSQL (bench/soak.py).
SOAK_MINUTES ?= 5

$(VENV)/.installed-soak: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e '.[test,demo,soak]'
	@touch $@

soak: $(VENV)/.installed-soak
	$(VENV)/bin/python bench/soak.py --database $(BENCH_PG)turnstate_soak --minutes $(SOAK_MINUTES)

# Not gating: SOAK_PAUSES pauses answered over HTTP, continued by 1, 2 and 4 workers on RQ (Redis at
# REDIS_PORT) and on django-tasks-db's db_worker, one worker killed after its claim (bench/soak_workers.py).
SOAK_PAUSES ?= 2000
SOAK_WORKERS ?= 1 2 4
SOAK_BACKENDS ?= rq rq-preloaded rq-simple db

soak-workers: $(VENV)/.installed | redis
	$(VENV)/bin/python bench/soak_workers.py --database $(BENCH_PG)turnstate_soak_workers \
		--redis redis://127.0.0.1:$(REDIS_PORT)/0 --pauses $(SOAK_PAUSES) --workers $(SOAK_WORKERS) \
		--backends $(SOAK_BACKENDS) --markdown

$(VENV)/.installed-dist: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e '.[test,dist]'
	@touch $@

# The wheel and the sdist (which carries the suite: tests/test_sdist.py), then twine's check.
dist: $(VENV)/.installed-dist
	rm -rf dist
	$(VENV)/bin/python -m build --outdir dist
	$(VENV)/bin/twine check --strict dist/*

# The documentation site: MkDocs Material and mkdocstrings from the `docs` extra. Strict: a
# broken link, anchor or cross-reference, a missing README section or a schema warning fails it.
$(VENV)/.installed-docs: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e '.[docs]'
	@touch $@

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 DATABASE_URL= $(VENV)/bin/mkdocs build --strict

# Redis for RQ, from apt when missing, started when down (as .ci/run does for MariaDB). The suite's
# queue test (tests/test_queue_workers.py, PostgreSQL legs) starts a server of its own from this
# binary, so concurrent legs never share a queue; `make soak-workers` uses this one.
REDIS_PORT ?= 6379

redis:
	@command -v redis-server >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q redis-server; }
	@redis-cli -p $(REDIS_PORT) ping >/dev/null 2>&1 \
		|| redis-server --daemonize yes --port $(REDIS_PORT) --bind 127.0.0.1 --save '' --appendonly no
	@for _ in $$(seq 50); do redis-cli -p $(REDIS_PORT) ping >/dev/null 2>&1 && exit 0; sleep 0.1; done; \
		echo "Redis did not start on port $(REDIS_PORT)"; exit 1

# GNU gettext for makemessages/compilemessages (tests/test_i18n.py), from apt when missing.
gettext:
	@command -v msgfmt >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q gettext; }

clean:
	rm -rf $(VENV) $(VENV6) $(VENV_PSYCOPG2) .pytest_cache .mypy_cache .ruff_cache dist build site
