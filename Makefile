# Stepwise: `make test` sets everything up on a fresh machine and runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(BIN)/python -m uv
STAMP  := $(VENV)/.installed

# Trust the system's certificate store (machines behind a TLS-inspecting proxy need it).
export UV_NATIVE_TLS := 1
export UV_SYSTEM_CERTS := 1

.PHONY: run test docs bench lint format typecheck lock clean chromium redis postgres

# The venv carries its own uv, which installs the pinned lock in seconds. Debian's system
# Python needs python3-venv for `-m venv`; install it when missing (we run as root there).
$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV) && apt-get update -qq \
		&& apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv

# Every extra (the app, the server, services, tracing, each SDK and adapter) and the dev tools,
# at the lock's versions. The wheel test installs from the cache this fills, offline. Bytecode
# is compiled at install (uv writes none by default): the app's first start would otherwise
# compile Streamlit and its imports, 9-19 s instead of 3-5 s here.
$(STAMP): requirements.lock pyproject.toml | $(BIN)/python
	$(UV) pip install --python $(BIN)/python --compile-bytecode -r requirements.lock -e ".[all,dev]"
	touch $(STAMP)

# The app on http://localhost:8501 with the SQLite store ./stepwise.db and the demo model.
run: $(STAMP)
	$(BIN)/streamlit run app.py

# Browser tests drive Debian's Chromium; install it when missing (CI runs as root).
chromium:
	@command -v chromium >/dev/null 2>&1 || test -x /usr/bin/chromium || { \
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# The services' tests start their own redis-server (Debian's) on a free loopback port.
redis:
	@command -v redis-server >/dev/null 2>&1 || { \
		apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }

# The store tests start their own PostgreSQL (Debian's initdb and pg_ctl, run as the postgres
# user) on a free loopback port; Debian keeps the binaries off PATH, the tests find them.
postgres:
	@command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { \
		apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; }

# Three groups side by side: the browser tests (tests/e2e: Chromium and streamlit servers,
# mostly waiting on them), the tests that mostly wait on processes they start (services,
# several servers, the sandbox's escapes) and all the others (the root conftest.py splits them
# by $STEPWISE_TEST_GROUP). The browser and process groups' logs are printed after the others';
# the run fails if any group does. `.venv/bin/pytest` alone runs every test in one process.
test: lint docs chromium redis postgres
	@STEPWISE_TEST_GROUP=browser $(BIN)/pytest tests/e2e -p no:cacheprovider \
		> .pytest-browser.log 2>&1 & browser=$$!; \
	STEPWISE_TEST_GROUP=processes $(BIN)/pytest tests/stepwise/services tests/faults \
		-p no:cacheprovider > .pytest-processes.log 2>&1 & processes=$$!; \
	STEPWISE_TEST_GROUP=others $(BIN)/pytest; others=$$?; \
	wait $$processes; process_tests=$$?; \
	wait $$browser; browsers=$$?; \
	echo "===== the tests that wait on processes ====="; cat .pytest-processes.log; \
	echo "===== the browser tests (tests/e2e) ====="; cat .pytest-browser.log; \
	test $$others -eq 0 && test $$process_tests -eq 0 && test $$browsers -eq 0

# Benchmarks side by side with LlamaIndex and LangGraph (their own env: bench/.venv), then
# the page's speed in Chromium (bench/results/page_speed.json), then what HTTP costs
# (bench/results/server_speed.json), then multi-agent services beside llama-agents (its own env:
# bench/.venv-llama-agents; bench/results/services_speed.json), then each framework adapter's
# per-step cost beside the framework alone (bench/results/adapters_speed.json), then a team's
# setup: the PostgreSQL step beside the SQLite one, one `stepwise serve` process against two
# on PostgreSQL (bench/results/server_processes.json), one control plane against two
# (bench/results/control_planes.json), then one long demo ReAct task per size: time per step,
# disk, load and fork at 1,000 / 5,000 / 20,000 steps (bench/results/long_task.json).
bench: $(STAMP) chromium redis postgres
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.page_speed
	$(BIN)/python -m bench.server_speed
	$(BIN)/python -m bench.event_streams
	$(BIN)/python -m bench.services_speed
	$(BIN)/python -m bench.adapters_speed
	$(BIN)/python -m bench.replay_speed
	$(BIN)/python -m bench.postgres_step
	$(BIN)/python -m bench.server_processes
	$(BIN)/python -m bench.control_planes
	$(BIN)/python -m bench.long_task

# ruff, then the layers of DESIGN.md §1 (import-linter's contracts in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The manual (mkdocs.yml, docs/, the API reference from agent_core's docstrings) into .site/,
# with every warning an error: a broken link or a docstring mkdocstrings cannot read fails it.
# NO_MKDOCS_2_WARNING quiets Material's notice about MkDocs 2, which is not a warning of ours.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir .site

typecheck: $(STAMP)
	$(BIN)/pyright

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Re-pin after changing dependencies in pyproject.toml: every extra, so `make test` runs them all.
lock: | $(BIN)/python
	$(UV) pip compile pyproject.toml --all-extras --python-version 3.11 -o requirements.lock --no-header --quiet

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .site
