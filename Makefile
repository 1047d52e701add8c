# Every target installs what it needs into .venv first, so each works from a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.requirements-installed
BOOK_HTML := _build/html/index.html
ASSIGNMENTS := $(notdir $(wildcard solutions/*))
# nbgrader runs helpers (alembic) by name, so the venv's bin must come first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: book serve test release install clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

## book: build the Jupyter Book into _build/html (warnings are errors) and say what to open
book: $(STAMP)
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo
	@echo "Book built. Open file://$(CURDIR)/$(BOOK_HTML)  (or run 'make serve' for http://127.0.0.1:8000)"
	-@$(PY) -m webbrowser -t "file://$(CURDIR)/$(BOOK_HTML)" >/dev/null 2>&1 || true

## serve: serve the built book on http://127.0.0.1:8000
serve: $(STAMP)
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

## release: regenerate the student notebooks in exercises/ from solutions/ (nbgrader generate_assignment)
release: $(STAMP)
	cd autograder && for a in $(ASSIGNMENTS); do nbgrader generate_assignment "$$a" --force --log-level=WARN || exit 1; done

## test: every test (book build, exercises, grader)
test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf _build .pytest_cache
