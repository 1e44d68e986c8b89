# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "fairledger needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,plot]'
	touch $(STAMP)

demo: $(STAMP)
	mkdir -p demo && rm -f demo/fairledger.db demo/fairledger.db-wal demo/fairledger.db-shm \
	  demo/fairledger-slurm.db demo/fairledger-slurm.db-wal demo/fairledger-slurm.db-shm
	$(BIN)/fairledger --db sqlite:///demo/fairledger.db demo

# The suite's processes (two workers and the commands its tests run as processes) compile the
# same modules: with bytecode writing off, as some machines set it, each compiles them all
# again, and the workers rewrite every test module's asserts (about 5 s a worker). Their
# bytecode is kept under the virtualenv instead, out of the source tree.
PYCACHE := $(abspath $(VENV))/pycache

test: $(STAMP)
	$(BIN)/lint-imports --no-cache
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(PYCACHE) $(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check ledger projections cli tests bench
	$(BIN)/ruff format --check ledger projections cli tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

bench: $(STAMP)
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) demo .pytest_cache .mypy_cache .ruff_cache .hypothesis
