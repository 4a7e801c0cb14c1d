# hnclip — common commands. `make test` is the project's test command (README, .ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Where make test's chapters write (the browser check's in browser/, with its screenshots in browser/screenshots/).
TEST_OUTPUT := $(CURDIR)/runs/test
# How many processes make test runs side by side (pytest-xdist), each with one thread: 2 suits a 2-core machine.
TEST_WORKERS ?= 2
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
# Chapter 5 collects what chapters 1–4 wrote to the same folder, so it is checked after them, together with their
# trained numbers, which are compared with results/chapter_numbers.json within a seed-derived tolerance
# (hnclip_core/replication/committed.py; nbval compares only what is deterministic exactly).
CHAPTER_5 := notebooks/05_results.ipynb
CHECK_AFTER_CHAPTERS := HNCLIP_OUTPUT_DIR=$(TEST_OUTPUT) HNCLIP_CHAPTER_OUTPUT=$(TEST_OUTPUT) \
	$(BIN)/python -m pytest $(NBVAL) $(CHAPTER_5) tests/test_chapter_numbers.py
# Where `make notebooks` runs the chapters (emptied first: committed outputs never come from a warm cache).
NOTEBOOKS_OUTPUT ?= $(CURDIR)/runs/notebooks-build

.PHONY: test unit-test notebook-test browser-test install-test tutorial ablations notebooks docs install lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when the package metadata changes; the editable install picks up code changes by itself. `dev` brings the
# core, the notebooks' harness (the [lab] extra) and the test tools.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The project's test command. In one pytest run, spread over $(TEST_WORKERS) one-thread processes (a notebook's cells
# stay together in one kernel): the unit and integration tests; the chapters in JupyterLab in headless Chromium,
# checked as a student sees them (tests/test_browser.py; skipped where no Chromium is installed — Debian:
# apt-get install chromium — except where HNCLIP_REQUIRE_BROWSER is set, as .ci/run does); chapters 1–4 and
# ablation_run re-executed and compared with their committed outputs (nbval). Then chapter 5 and the trained numbers.
# The check of a core-only install is left to make install-test (a step of .ci/run).
test: lint
	rm -rf $(TEST_OUTPUT)
	OMP_NUM_THREADS=1 HNCLIP_OUTPUT_DIR=$(TEST_OUTPUT) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope \
		-m "not install" $(NBVAL) --ignore=$(CHAPTER_5) --ignore=tests/test_chapter_numbers.py tests notebooks
	$(CHECK_AFTER_CHAPTERS)

# Parts of make test on their own. unit-test: everything but the browser check and the notebooks.
unit-test: lint
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not browser and not install" tests

# `pip install hnclip-core` alone, without the [lab] extra: the wheel built from a copy of the source and installed
# into a new venv (pip resolves its requirements; torch is linked from this venv, not unpacked again) imports every
# core module without the harness's packages, fine-tunes the toy for an epoch from the command line, and a harness
# command names the extra (tests/test_light_install.py, 1.5 min). Not in make test: .ci/run runs it as a step.
install-test: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -m install tests/test_light_install.py

browser-test: $(STAMP)
	rm -rf $(TEST_OUTPUT)/browser
	HNCLIP_OUTPUT_DIR=$(TEST_OUTPUT) $(BIN)/python -m pytest -m browser

# The chapters one after another in one process, with the threads torch picks (.ci/run also runs this with AVX2
# kernels): the same checks as make test's, under another split of the floating-point reductions.
notebook-test: $(STAMP)
	rm -rf $(TEST_OUTPUT)
	HNCLIP_OUTPUT_DIR=$(TEST_OUTPUT) $(BIN)/python -m pytest $(NBVAL) --ignore=$(CHAPTER_5) notebooks
	$(CHECK_AFTER_CHAPTERS)

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
	$(BIN)/python -m hnclip_core.replication.committed trained-numbers $(NOTEBOOKS_OUTPUT) > results/chapter_numbers.json
	cp $(NOTEBOOKS_OUTPUT)/scorecard.json results/scorecard.json
	cp $(NOTEBOOKS_OUTPUT)/figures/convergence.png $(NOTEBOOKS_OUTPUT)/figures/margin_annealing.png docs/figures/
	cp $(NOTEBOOKS_OUTPUT)/figures/02_real_batches.png docs/figures/real_batches.png
	cp $(NOTEBOOKS_OUTPUT)/figures/02_gradient_dynamics.png docs/figures/gradient_dynamics.png
	cp $(NOTEBOOKS_OUTPUT)/figures/05_plug_and_play.png docs/figures/plug_and_play.png
	cp $(NOTEBOOKS_OUTPUT)/figures/05_scorecard.png docs/figures/scorecard.png
	$(MAKE) docs
	$(BIN)/python -m hnclip_core.replication.committed drop-widget-views notebooks/*.ipynb
	$(BIN)/nbstripout --keep-output --keep-count --extra-keys "metadata.papermill cell.metadata.papermill cell.metadata.execution metadata.widgets" notebooks/*.ipynb
	# papermill tags every cell; give the notebooks back their scripts' cell metadata, so that JupyterLab's jupytext
	# opens them even where a script is older than its notebook
	$(BIN)/jupytext --update --to ipynb notebooks/[0-9][0-9]_*.py notebooks/ablation_run.py

# Render the measured numbers of README.md and docs/results.md from results/ (hnclip_core.replication.generated_docs).
docs: $(STAMP)
	$(BIN)/python -m hnclip_core.replication.generated_docs

lint: $(STAMP)
	$(BIN)/ruff check hnclip_core tests benchmarks notebooks
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache runs
