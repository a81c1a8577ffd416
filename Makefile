# Stepwise: `make test` sets everything up on a fresh machine and runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(PYTHON) -m uv
STAMP  := $(VENV)/.installed

.PHONY: test lint format typecheck lock clean uv

# uv installs the pinned environment in seconds; fetch it with pip if this Python lacks it.
uv:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv

$(STAMP): requirements.lock pyproject.toml | uv
	test -x $(BIN)/python || $(UV) venv --python $(PYTHON) $(VENV)
	$(UV) pip install --python $(BIN)/python -r requirements.lock -e .
	touch $(STAMP)

test: lint
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
lock: uv
	$(UV) pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements.lock --no-header --quiet

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
