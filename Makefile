# The README's test command: `make test` installs what the tests need (Debian flite, a venv with the
# package and its dev extra) and runs the fast test tier. `make test-slow` adds the slow end-to-end tier.
PY ?= python3
VENV ?= .venv

.PHONY: test test-slow install deps teachers

deps:
	@command -v flite >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq flite; }
	@command -v npm >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm; }

# Kokoro's English voice pack (npm kokoro-js) for the peers' tests; a no-op once built.
teachers: install
	PYTHON=$(VENV)/bin/python recipes/teachers/install.sh

install: deps
	@[ -x $(VENV)/bin/python ] || $(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[dev]'

test: install teachers
	$(VENV)/bin/pytest

test-slow: install teachers
	$(VENV)/bin/pytest -m slow
