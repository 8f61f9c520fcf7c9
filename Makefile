# The README's test command: `make test` installs what the tests need (Debian flite, a venv with the
# package and its dev extra) and runs the fast test tier. `make test-slow` adds the slow end-to-end tier.
PY ?= python3
VENV ?= .venv

.PHONY: test test-slow install deps

deps:
	@command -v flite >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq flite; }
	@# The server's page is tested in headless Chromium (Playwright drives Debian's build: no browser download).
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

install: deps
	@[ -x $(VENV)/bin/python ] || $(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[dev]'

test: install
	$(VENV)/bin/pytest

test-slow: install
	$(VENV)/bin/pytest -m slow
