# hnclip — common commands. `make test` is the project's test command (README, .ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

NBVAL_OUTPUT := $(CURDIR)/runs/nbval
# Where the browser check's chapters write, and its screenshots (screenshots/).
BROWSER_OUTPUT := $(CURDIR)/runs/browser
# Where `make notebooks` runs the chapters (emptied first: committed outputs never come from a warm cache).
NOTEBOOKS_OUTPUT ?= $(CURDIR)/runs/notebooks-build

.PHONY: test unit-test notebook-test browser-test tutorial ablations notebooks install lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when the package metadata changes; the editable install picks up code changes by itself.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Unit and integration tests, the chapters in JupyterLab in a browser, then every chapter notebook
# re-executed and compared with its committed outputs.
test: unit-test browser-test notebook-test

unit-test: $(STAMP)
	$(BIN)/ruff check hnclip_core tests benchmarks notebooks
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -m "not browser"

# tests/test_browser.py (≈ 1.5 min): chapter 2 run, and all five chapters opened, in JupyterLab in headless Chromium,
# checked as a student sees them; full-page screenshots in runs/browser/screenshots/. Skipped where no Chromium is
# installed (Debian: apt-get install chromium; .ci/run installs it and sets HNCLIP_REQUIRE_BROWSER, which turns the
# skip into a failure).
browser-test: $(STAMP)
	rm -rf $(BROWSER_OUTPUT)
	HNCLIP_OUTPUT_DIR=$(BROWSER_OUTPUT) $(BIN)/python -m pytest -m browser

# nbval compares what is deterministic exactly; the trained numbers the chapters wrote are then compared with
# results/chapter_numbers.json within a seed-derived tolerance (tests/chapter_numbers.py).
notebook-test: $(STAMP)
	rm -rf $(NBVAL_OUTPUT)
	HNCLIP_OUTPUT_DIR=$(NBVAL_OUTPUT) $(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg notebooks
	HNCLIP_CHAPTER_OUTPUT=$(NBVAL_OUTPUT) $(BIN)/python -m pytest tests/test_chapter_numbers.py

# The README's main command: run all chapters headless into runs/tutorial/.
tutorial: $(STAMP)
	$(BIN)/python -m hnclip_core.replication.tutorial --output-dir runs/tutorial

# Every ablation study of the paper (hnclip_core.replication.ablations.STUDIES) as a papermill grid over
# notebooks/ablation_run, at full scale on the embedded default; completed points are skipped, so an interrupted
# run continues.
# Collected into results/ablations.json, which chapter 5 draws. Pass STUDIES="gamma seeds" to run some.
ablations: $(STAMP)
	$(BIN)/python -m hnclip_core.replication.ablations $(STUDIES)

# Re-execute the committed notebooks at their defaults (after editing a chapter's .py script) from an empty run
# cache, strip volatile metadata, keep the outputs and execution counts that nbval checks (it skips cells without
# a count), and record the trained numbers that notebook-test compares within tolerance.
# Only the notebooks' own scripts are paired: conftest.py, chapter helpers and solutions/ are plain modules.
notebooks: $(STAMP)
	$(BIN)/jupytext --update --to ipynb notebooks/[0-9][0-9]_*.py notebooks/ablation_run.py
	rm -rf $(NOTEBOOKS_OUTPUT)
	for nb in notebooks/*.ipynb; do \
		HNCLIP_OUTPUT_DIR=$(NOTEBOOKS_OUTPUT) $(BIN)/papermill $$nb $$nb --cwd notebooks -k python3 || exit 1; \
	done
	$(BIN)/python -m tests.chapter_numbers $(NOTEBOOKS_OUTPUT) > results/chapter_numbers.json
	$(BIN)/python -m tests.committed_notebooks notebooks/*.ipynb
	$(BIN)/nbstripout --keep-output --keep-count --extra-keys "metadata.papermill cell.metadata.papermill cell.metadata.execution metadata.widgets" notebooks/*.ipynb
	# papermill tags every cell; give the notebooks back their scripts' cell metadata, so that JupyterLab's jupytext
	# opens them even where a script is older than its notebook
	$(BIN)/jupytext --update --to ipynb notebooks/[0-9][0-9]_*.py notebooks/ablation_run.py

lint: $(STAMP)
	$(BIN)/ruff check hnclip_core tests benchmarks notebooks
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache runs
