# The two commands a newcomer needs: `make run` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck format bench install clean package docs

$(STAMP): requirements.txt requirements-dev.txt
	@echo "==> Setting up .venv (once, or after requirements*.txt change): about 2 minutes"
	$(PYTHON) -m venv $(VENV)
	@echo "==> Installing the Python packages the registry and its tests use ..."
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $(STAMP)
	@echo "==> .venv ready: $$($(PY) -m pip list --format=freeze 2>/dev/null | wc -l) packages"

install: $(STAMP)

run: $(STAMP)
	$(PY) -m infrastructure.local

# `make run` starting empty and keeping nothing (the state stays in memory; .data/ untouched).
.PHONY: run-fresh
run-fresh: $(STAMP)
	REGISTRY_DATA_DIR= $(PY) -m infrastructure.local

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# mypy over chalicelib/ and infrastructure/ (strict on chalicelib/core), see pyproject.toml.
typecheck: $(STAMP)
	$(PY) -m mypy

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

# The web UI's browser tests drive Debian's chromium (never a browser build downloaded by
# `playwright install`), and the SAML e2e's IdP (pysaml2) signs with Debian's xmlsec1: both
# installed here when missing (CI runs as root; sudo otherwise).
.PHONY: browser
browser:
	@command -v chromium >/dev/null && command -v xmlsec1 >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y chromium xmlsec1; }

# Lint, type-check, package (template + cfn-lint), then the suite, whose summary closes the output.
# The suite runs in TEST_WORKERS processes (pytest-xdist; `auto`: one per core), a test file's
# tests together on one worker (its module fixtures built once), the end-to-end files handed
# out first (tests/conftest.py orders them); each worker starts its own e2e stack and browser.
# `make test TEST_WORKERS=0` runs it in this one process, as before.
TEST_WORKERS ?= auto
PYTEST_ARGS ?=
test: lint typecheck browser
	$(MAKE) package
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# out/: the CloudFormation template (Chalice's, merged with infrastructure/template.py's)
# and the deployment zip (without the botocore models of services no function calls, with
# our code's bytecode, see infrastructure/slim.py), linted with cfn-lint. Packaging reads no
# AWS account. The OpenAPI document (chalicelib/meta/openapi.json, served by the meta
# function) is regenerated first.
package: $(STAMP)
	rm -rf out build/merge.json
	$(PY) -m infrastructure.openapi
	AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} $(PY) -m infrastructure.template build/merge.json
	AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} $(VENV)/bin/chalice package \
		--stage prod --merge-template build/merge.json out/
	$(PY) -m infrastructure.template --compact out/sam.json
	$(PY) -m infrastructure.slim out/deployment.zip
	$(PY) -m infrastructure.scanner_layer
	$(VENV)/bin/cfn-lint out/sam.json
	@ls -l out/deployment.zip | awk '{printf "deployment package: %.1f MB\n", $$5/1048576}'

# The documentation site (MkDocs, Material theme) from docs/*.md into site/, in strict mode:
# a broken link or anchor fails it. Offline (no plugin fetches, no Google Fonts link).
# The web UI's screenshots in docs/ (the browser tests that take them, writing into docs/).
.PHONY: screenshots
screenshots: $(STAMP) browser
	REGISTRY_SCREENSHOTS=1 $(PY) -m pytest -q tests/e2e/test_web_ui.py tests/e2e/test_siteadmin_e2e.py \
		tests/e2e/test_people_web_e2e.py tests/e2e/test_publish_web_e2e.py

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache out build site
