# Everything a fresh machine needs, from python3 alone. `make demo` and `make test` are the two
# commands the README opens with; .ci/run runs `make test`.

VENV ?= .venv
PY := $(VENV)/bin/python
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: setup demo chat test test-isolated lint bench package-smoke docs docs-serve clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# setuptools prints one notice for any editable install; it is information, not a fault.
	@# editable_mode=compat: a plain path entry in a .pth file, which mypy follows (the default
	@# mode's import hook hides the package from mypy run outside the checkout).
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet \
		--config-settings editable_mode=compat -e '.[dev,postgres,mcp,docs]'
	touch $@ $(VENV)/.demo-installed

# What the demo runs and no more: the package and its own dependencies, none of the test, lint
# or database tools. uv installs them (parallel downloads, no byte-compiling: Python compiles
# what it imports, once) in seconds where pip takes a minute; pip does it if uv cannot (an
# index that only pip's own configuration names, say). When python3 has a pip of its own, that
# pip fetches uv into a venv made without pip, which takes a fraction of the time.
$(VENV)/.demo-installed: pyproject.toml
	@set -e; \
	if python3 -m pip --python "$$(command -v python3)" --version >/dev/null 2>&1; then \
		python3 -m venv --without-pip $(VENV); pip="python3 -m pip --python $(PY)"; \
	else \
		python3 -m venv $(VENV); pip="$(PY) -m pip"; \
	fi; \
	$$pip install --quiet --no-compile uv; \
	$(VENV)/bin/uv pip install --quiet --python $(PY) -C editable_mode=compat -e . \
		|| PYTHONWARNINGS="ignore:Editable installation" $$pip install --quiet --no-compile \
			--config-settings editable_mode=compat -e .
	touch $@

setup: $(VENV)/.installed

# `make demo DEMO_ARGS="--port 8080 --model openai/gpt-4o-mini"`: the serve options.
DEMO_ARGS ?=

demo: $(VENV)/.demo-installed
	$(PY) -m helix_stream serve $(DEMO_ARGS)

chat: $(VENV)/.demo-installed
	$(PY) -m helix_stream chat

# The PostgresStore third of the store contract needs PostgreSQL: .ci/postgres starts the
# machine's cluster when it has one (a run without it ends with a red "POSTGRES TESTS SKIPPED").
test: setup
	@.ci/postgres
	$(PY) -m pytest -q

# Each tests/*/ folder in its own pytest process, then the top-level test files: a test that
# passes only after another folder ran (an import, a warning filter, a cache) fails here.
test-isolated: setup
	@.ci/postgres
	@set -e; for dir in tests/*/; do \
		case "$$dir" in *__pycache__*) continue;; esac; \
		echo "== $$dir"; $(PY) -m pytest -q -p no:cacheprovider "$$dir"; \
	done; \
	echo "== tests/test_*.py"; $(PY) -m pytest -q -p no:cacheprovider tests/test_*.py

# Build the sdist and the wheel, install each into a fresh venv, smoke-test it, and check that
# mypy --strict sees the installed wheel as typed (.ci/package-smoke).
package-smoke: setup
	PY=$(PY) .ci/package-smoke

lint: setup
	$(VENV)/bin/ruff check helix_stream tests bench examples
	$(VENV)/bin/ruff format --check helix_stream
	$(VENV)/bin/mypy

# bench_serving.py takes its knobs from BENCH_SERVING_ARGS, e.g. `make bench
# BENCH_SERVING_ARGS=--quick` (a short run) or `--parts b --cpu-repeats 5`; see its --help.
BENCH_SERVING_ARGS ?=

$(VENV)/.bench-installed: $(VENV)/.installed
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e '.[dev,postgres,bench]'
	touch $@

bench: setup $(VENV)/.bench-installed
	for script in bench/bench_*.py; do \
		echo "== $$script"; \
		case "$$script" in \
			*bench_serving.py) $(PY) $$script $(BENCH_SERVING_ARGS) || exit 1;; \
			*) $(PY) $$script || exit 1;; \
		esac; \
	done

# The documentation site (mkdocs.yml): strict (a warning, a broken link or a missing reference
# entry fails), offline (no fonts or scripts from another host). Output in site/.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8008

clean:
	rm -rf $(VENV) site .cache dist build *.egg-info .pytest_cache .mypy_cache .ruff_cache
