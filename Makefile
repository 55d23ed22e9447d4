# Everything a fresh machine needs, from python3 alone. `make demo` and `make test` are the two
# commands the README opens with; .ci/run runs `make test`.

VENV ?= .venv
PY := $(VENV)/bin/python
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: setup demo chat test lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,postgres]'
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(PY) -m helix_stream serve

chat: setup
	$(PY) -m helix_stream chat

test: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check helix_stream tests bench examples
	$(VENV)/bin/ruff format --check helix_stream
	$(VENV)/bin/mypy

bench: setup
	for script in bench/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache
