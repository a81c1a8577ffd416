# Stepwise: `make test` sets everything up on a fresh machine and runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
STAMP  := $(VENV)/.installed

.PHONY: test lint format typecheck lock clean

$(UV):
	$(PYTHON) -m pip install --quiet --user uv || $(PYTHON) -m pip install --quiet uv

$(STAMP): requirements.lock pyproject.toml | $(UV)
	test -d $(VENV) || $(UV) venv --python $(PYTHON) $(VENV)
	$(UV) pip install --python $(BIN)/python -r requirements.lock -e .
	touch $(STAMP)

test: $(STAMP) lint
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/pyright

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Re-pin after changing dependencies in pyproject.toml.
lock: | $(UV)
	$(UV) pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements.lock --no-header --quiet

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
