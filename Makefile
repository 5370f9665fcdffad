# The two set-up commands of the README. Both create .venv and install on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test lint

demo: $(VENV)/.installed
	$(BIN)/mcsched demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@# a setuptools egg-info next to the sources would register the plugin twice
	rm -rf *.egg-info
	touch $@
