# Every target installs what it needs into .venv first, so each works from a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.requirements-installed
BOOK_HTML := _build/html/index.html
# nbgrader runs helpers (alembic) by name, so the venv's bin must come first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
.DEFAULT_GOAL := help

.PHONY: help book pdf serve test test-fast lint typecheck mutate release grade integrity collect collect-exchange hub-setup uncollect feedback formgrader bench bench-waits bench-scale portal portal-links lti-register hub-proxy move-db bench-portal system-packages install clean

# uv installs what requirements.txt pins (about 25 s from nothing, where pip took about 4 minutes); its own version
# is pinned there too, and read from there for the one pip install that brings it.
# Then every Python of the venv (jupyter-book, nbgrader's command line) defers jsonschema's IRI grammars, ~2 CPU-s a
# process (autograder/posenc_autograder/iri_deferral.py).
$(STAMP): requirements.txt autograder/posenc_autograder/iri_deferral.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "$$(grep -E '^uv==' requirements.txt)"
	$(VENV)/bin/uv pip install --quiet --python $(PY) -r requirements.txt
	$(PY) -c 'from posenc_autograder import iri_deferral; iri_deferral.install_hook()'
	touch $(STAMP)

## help: this list (also plain `make`): every target with what it does, from the Makefile's own `## target:` lines
help:
	@awk 'match($$0, /^## [a-z-]+: /) { name = substr($$0, 4, RLENGTH - 5); \
	  printf "  make %-15s %s\n", name, substr($$0, RLENGTH + 1) }' $(firstword $(MAKEFILE_LIST))

## install: the virtual environment .venv with everything requirements.txt names (every target does it first)
install: $(STAMP)

# The book starts Sphinx and a kernel per chapter, each importing the same numpy, matplotlib, IPython and Sphinx: the
# first compiles them and the others read its bytecode, whatever PYTHONDONTWRITEBYTECODE says (set, every process
# compiled them all again: about 1.5 CPU-s a kernel).
book pdf: export PYTHONDONTWRITEBYTECODE :=
## book: build the Jupyter Book into _build/html (warnings are errors) and say what to open
book: $(STAMP)
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo
	@echo "Book built. Open file://$(CURDIR)/$(BOOK_HTML)  (or run 'make serve' for http://127.0.0.1:8000)"
	-@$(PY) -m webbrowser -t "file://$(CURDIR)/$(BOOK_HTML)" >/dev/null 2>&1 || true

## pdf: the whole book as one PDF in _build/html (linked from the intro): Chromium prints the single-page build
pdf: $(STAMP) system-packages
	$(VENV)/bin/jupyter-book build . --builder singlehtml -W -n --keep-going
	$(PY) _ext/print_book.py _build/singlehtml _build/html

## serve: serve the built book on http://127.0.0.1:8000
serve: $(STAMP)
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

# release and grade import nbgrader, SQLAlchemy, nbconvert and the grader (about 800 modules): compiled on every run
# when PYTHONDONTWRITEBYTECODE is set (2.6 of release's 5 CPU-s at a points change), read from bytecode once written.
release grade: export PYTHONDONTWRITEBYTECODE :=
## release: hidden-test cells, test_plan.csv, README totals and exercises/ from the HiddenTest objects, all or nothing; the gradebook follows (grades kept)
release: $(STAMP)
	$(PY) -m posenc_autograder release

## grade: grade every submission in autograder/submitted (JOBS=n cores, default all; SCHEDULER=tcp://... for Dask)
JOBS ?= 0
grade: $(STAMP)
	$(PY) -m posenc_autograder grade --jobs $(JOBS) $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(if $(DB_URL),--db-url $(DB_URL)) $(GRADE_ARGS)

## integrity: after make grade: autograder/reports/integrity.html, evidence of copying for the instructor only
integrity: $(STAMP)
	$(PY) -m posenc_autograder integrity

## feedback: after manual grading in formgrader: every feedback page and the grade files again, from the gradebook
feedback: $(STAMP)
	$(PY) -m posenc_autograder feedback $(if $(DB_URL),--db-url $(DB_URL))

## formgrader: nbgrader's formgrader for this course on 127.0.0.1 (PORT=n, default a free one); prints its address
formgrader: $(STAMP)
	$(PY) -m posenc_autograder formgrader $(if $(PORT),--port $(PORT))

## collect: unpack an LMS download (Canvas, Moodle, Blackboard or plain "<student>_<notebook>.ipynb") into autograder/submitted, with autograder/roster.csv (ZIP=..., ASSIGNMENT=..., LMS=...)
ASSIGNMENT ?= positional_encoding
collect: $(STAMP)
	@test -n "$(ZIP)" || { echo "usage: make collect ZIP=path/to/submissions.zip [ASSIGNMENT=positional_encoding] [LMS=canvas|moodle|blackboard|plain]"; exit 2; }
	$(PY) -m posenc_autograder collect "$(ZIP)" "$(ASSIGNMENT)" $(if $(LMS),--lms $(LMS))

## collect-exchange: record every submission students made with `nbgrader submit` (ASSIGNMENT=..., EXCHANGE=<root> if not the course's): each an attempt with its time and zone, a roster row each
collect-exchange: $(STAMP)
	$(PY) -m posenc_autograder collect-exchange "$(ASSIGNMENT)" $(if $(EXCHANGE),--exchange "$(EXCHANGE)")

## hub-setup: for a JupyterHub: nbgrader's exchange outside the course (EXCHANGE=/srv/nbgrader/exchange), the course closed to students' accounts (0750, GROUP=<instructors>)
hub-setup: $(STAMP)
	$(PY) -m posenc_autograder hub-setup $(if $(EXCHANGE),--exchange "$(EXCHANGE)") $(if $(GROUP),--group "$(GROUP)")

## uncollect: undo a collect: STUDENT=id [ASSIGNMENT=name] or ZIP=the zip; removes the submission, its roster and gradebook rows, feedback and report entries, and says what
uncollect: $(STAMP)
	@test -n "$(STUDENT)$(ZIP)" || { echo "usage: make uncollect STUDENT=<id> [ASSIGNMENT=<name>]   or   make uncollect ZIP=<the zip collected>"; exit 2; }
	$(PY) -m posenc_autograder uncollect $(if $(STUDENT),--student "$(STUDENT)") $(if $(ZIP),--zip "$(ZIP)") $(if $(filter-out file,$(origin ASSIGNMENT)),--assignment "$(ASSIGNMENT)") $(if $(DB_URL),--db-url $(DB_URL))

## portal: the submission portal on http://127.0.0.1:8080 (PORT=..., JOBS=n sandboxes, SCHEDULER=..., DB_URL=...; PORTAL_ARGS=--allow-root as root)
portal: $(STAMP)
	$(PY) -m posenc_autograder portal --port $(or $(PORT),8080) --jobs $(JOBS) $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(if $(DB_URL),--db-url $(DB_URL)) $(PORTAL_ARGS)

## portal-links: autograder/reports/portal-links.csv, every valid sign-in link, new ones for new students marked (PORTAL_URL=https://..., STUDENTS="id ..." adds ids, RENEW=1 replaces them)
portal-links: $(STAMP)
	$(PY) -m posenc_autograder portal-links $(if $(PORTAL_URL),--base-url $(PORTAL_URL)) $(foreach s,$(STUDENTS),--student $(s)) $(if $(RENEW),--renew) $(if $(DB_URL),--db-url $(DB_URL))

## lti-register: register the portal with an LMS as an LTI 1.3 tool (ISSUER=..., CLIENT_ID=..., DEPLOYMENT_ID=..., PORTAL_URL=https://...): the key pair, autograder/lti.json, and what to paste into Canvas and Moodle
lti-register: $(STAMP)
	@test -n "$(ISSUER)" -a -n "$(CLIENT_ID)" || { echo "usage: make lti-register ISSUER=https://canvas.instructure.com CLIENT_ID=... [DEPLOYMENT_ID=...] [PORTAL_URL=https://grader.example.edu] [LTI_ARGS=--auth-login-url ...]"; exit 2; }
	$(PY) -m posenc_autograder lti-register --issuer "$(ISSUER)" --client-id "$(CLIENT_ID)" $(foreach d,$(DEPLOYMENT_ID),--deployment-id "$(d)") $(if $(PORTAL_URL),--base-url "$(PORTAL_URL)") $(LTI_ARGS)

## move-db: move the course's database to another (TO=postgresql+psycopg2://user@host/db or TO=sqlite:////path): grades, manual grades, comments, attempts, sign-in links, every table; then every command uses it
move-db: $(STAMP)
	@test -n "$(TO)" || { echo "usage: make move-db TO=<database URL>   (postgresql+psycopg2://user@host/name, or sqlite:////absolute/path.db)"; exit 2; }
	$(PY) -m posenc_autograder move-db --to "$(TO)" $(if $(DB_URL),--db-url $(DB_URL))

## bench-portal: 200 simulated students upload to a portal on 127.0.0.1 over 2 minutes, on SQLite then PostgreSQL; throughput, time to feedback, memory, CPU per request (STUDENTS=2000 SPREAD=300: the rush of 2,000 in 5 minutes; DATABASE=sqlite|postgresql; STATUS_COST=2000: only the CPU of a status request with 2000 queued); writes autograder/figures/bench-portal.md and the README's block
bench-portal: $(STAMP) system-packages
	$(PY) -m posenc_autograder bench-portal $(if $(STUDENTS),--students $(STUDENTS)) $(if $(SPREAD),--spread $(SPREAD)) $(if $(DATABASE),--database $(DATABASE)) $(if $(STATUS_COST),--status-cost $(STATUS_COST))

## bench-scale: generated classes of N="100 300 1000" graded and compared: time, peak memory, disk per student (HOSTILE=1: with the attack suite's memory attacks); writes autograder/figures/bench-scale[-hostile].md and the README's block
N ?= 100 300 1000
bench-scale: $(STAMP)
	$(PY) -m posenc_autograder bench-scale $(N) $(if $(HOSTILE),--hostile)

## bench-waits: every wait of the instructor and developer timed in a scratch copy beside its goal (release, regrade of 300, first grade, test, test-fast, book from nothing); writes its figures file and the README's table (QUICK=1: the rows of seconds only; BEFORE=<commit>: each row timed on that commit too, just before it is timed now)
bench-waits: $(STAMP)
	$(PY) -m posenc_autograder bench-waits $(if $(QUICK),--quick) $(if $(BEFORE),--before $(BEFORE))

## bench: stock sequential `nbgrader autograde` against `make grade` on the same 60 submissions, then CPU per phase per notebook of each assignment beside the floor; writes autograder/figures/bench.md and the README's block
bench: $(STAMP)
	$(PY) -m posenc_autograder bench --students 60

## system-packages: Debian packages the tests need (PostgreSQL for the scale test, Chromium for the browser tests)
system-packages:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && test -x /usr/bin/chromium || { \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql chromium; }

## hub-proxy: JupyterHub's configurable-http-proxy (npm, into .venv/node), for the portal-as-hub-service test
CHP := $(VENV)/node/node_modules/.bin/configurable-http-proxy
hub-proxy: $(CHP)
$(CHP):
	@command -v npm >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm; }
	npm install --silent --no-audit --no-fund --prefix $(VENV)/node configurable-http-proxy@5.3.0

# Three workers on the two cores, for make test and make test-fast: a worker spends much of its time waiting, not
# computing (a class graded while a notebook sleeps out its time limit, kernels and Chromium pages loading: test_grading
# used a third of a core, test_attacks two thirds); a third worker computes meanwhile (same run, nine slow files: 186 s
# on two, 161 s on three). make test-fast's two workers each waited ~10 s of their ~40 (a cell's time limit run out, a
# sandbox's start, a portal's request in a thread), both cores idle; the third costs its collection and its own first
# imports and zygote (~7 CPU-s)
TEST_WORKERS ?= 3
# The suite starts many Python processes (each worker collects every test file; the tests run the commands): each
# reads the bytecode the first one wrote rather than compiling the package and rewriting the tests' asserts again
# (half of a worker's collection), whatever an environment's PYTHONDONTWRITEBYTECODE says (empty: written).
test test-fast: export PYTHONDONTWRITEBYTECODE :=
## test: every test (book build, exercises, grader) and the solution notebooks, on TEST_WORKERS=3 workers
test: $(STAMP) system-packages hub-proxy lint
	# with the solution notebooks (nbval) in the same run: a notebook's cells are one group (conftest.py), so they run
	# in order in one worker's kernel while the other workers go on with tests/; groups go out longest first by the
	# last run's record, the book's build first and its browser tests after it (tests/support/run_order.py)
	POSENC_RUN=test $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup tests solutions

## lint: ruff with the rules in ruff.toml (pyflakes, pycodestyle, line length, blind excepts)
lint: $(STAMP)
	$(VENV)/bin/ruff check .

## typecheck: mypy over the grader package with mypy.ini (strict for results, settings and records; ~16 CPU-s from a fresh clone, under 1 s with its cache); make test runs it as tests/architecture/test_types.py
typecheck: $(STAMP)
	$(VENV)/bin/mypy

## test-fast: lint, then tests/ but the book, browser, PostgreSQL, JupyterHub and end-to-end tests and the dearest unit tests (tests/left_to_make_test.toml: each file keeps its cheapest), on TEST_WORKERS=3 workers, each file whole on one, longest first; make test runs all of them and the solution notebooks
test-fast: lint
	POSENC_RUN=test-fast $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -p no:nbval -p no:anyio -m "not book and not browser and not postgres and not slow and not dear and not hub" tests

## mutate: mutants of each assignment's reference.py graded by the hidden tests (ASSIGNMENT=name for one); prints the mutation score, per assignment too, and the survivors
mutate: $(STAMP)
	$(PY) -m posenc_autograder mutate $(if $(filter-out file,$(origin ASSIGNMENT)),--assignment "$(ASSIGNMENT)")

## clean: remove the built book and the test cache (never the gradebook, submissions or reports)
clean:
	rm -rf _build .pytest_cache
