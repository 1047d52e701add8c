"""What a regrade keeps and says: the grader's fingerprint (its code, limits and released notebooks), the higher
score kept for an unchanged file and grader, the note on how a changed grader moved the scores, and the digests that
decide what of a notebook's last run still holds (JobDigests: records/kept_records.py keeps what a regrade needs by
them)."""
from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import hashlib
import json
import pathlib
import sys
from collections.abc import Mapping

from posenc_autograder.checks import REGISTRY, variants
from posenc_autograder.course import RELEASE_DIRECTORY, Course, grade_id, write_replacing
from posenc_autograder.grading.execute import GradingTask
from posenc_autograder.grading.pipeline import Prepared
from posenc_autograder.grading.shared_probes import SHARED_CELL, varies
from posenc_autograder.results import Note, NotebookResult, NoteKind, Problem
from posenc_autograder.settings import Limits

# The code that decides a score, by package: a change anywhere in these is a new grader, not a flaky rerun.
# (Reports, records, integrity, authoring and devtools only present or store what these decided; the evidence is
# the exception, its digests compared across the whole class.)
GRADING_PACKAGES = ("checks", "probes", "sandbox", "grading", "intake")
GRADING_MODULES = ("course.py", "results.py",
                   "records/evidence.py")   # the integrity evidence's digests: a new format must rewrite them all
PACKAGE = pathlib.Path(__file__).resolve().parents[1]


def grader_fingerprint(course: Course, assignment: str, limits: Limits, package: pathlib.Path = PACKAGE) -> str:
    """Identifies the grader of one assignment: its code, the limits, and the released notebooks."""
    digest = hashlib.sha256(json.dumps(dataclasses.asdict(limits), sort_keys=True).encode())
    digest.update(variants.grader_setting(course).encode())      # other inputs: another grader
    released = sorted((course.path(RELEASE_DIRECTORY) / assignment).glob("*.ipynb"))
    for path in grading_files(package):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    for path in released:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def grading_files(package: pathlib.Path) -> list[pathlib.Path]:
    files = [package / name for name in GRADING_MODULES]
    for name in GRADING_PACKAGES:
        files += sorted((package / name).rglob("*.py"))
    return files


def keep_higher_scores(result: NotebookResult, previous: dict | None, digest: str | None,
                       fingerprint: str | None = None) -> NotebookResult:
    """Re-grading the same file with the same grader never lowers a test's score (a loaded machine can time
    out a good answer). A changed grader (checks, limits, released notebook) scores afresh."""
    if (previous is None or digest is None or previous.get("sha256") != digest
            or previous.get("fingerprint") != fingerprint):
        return result
    before = {t["cell_id"]: t for t in previous["result"]["tests"]}
    kept = []
    for test in result.tests:
        old = before.get(test.cell_id)
        if old and old["points"] > test.points and old["max_points"] == test.max_points:
            kept.append(test.cell_id)
            test.points, test.problems = old["points"], [Problem.from_json(p) for p in old["problems"]]
    if kept:
        result.notes.append(Note(NoteKind.SCORES_KEPT, f"this run scored lower on {', '.join(kept)} for an "
                                 f"unchanged file; the earlier, higher scores were kept"))
    return result


class Way(str, enum.Enum):
    """How a regraded notebook's result was made (the least work that gives what a full regrade gives)."""
    REWEIGHED = "re-weighed"      # only points changed: the kept outcomes of its last run weighed again
    REJUDGED = "re-judged"        # a judge changed: the kept answers of its last run judged again
    REPROBED = "re-probed"        # a hidden test's inputs changed: only that test's probes ran, the rest was kept
    RUN = "run again"             # the notebook was executed again with every test's probes


@dataclasses.dataclass(frozen=True)
class HowRegraded:
    """The one fact the page's regrade note and make grade's summary both say of a regraded notebook."""
    way: Way
    tests: tuple[str, ...] = ()   # REJUDGED: the tests whose kept answers were judged again; REPROBED: whose probes ran
    why: str | None = None        # RUN: why it ran again (a new file, --force, what of the job changed)

    def said(self) -> str:
        """How, for the page: the clause after what moved."""
        if self.way is Way.REWEIGHED:
            return "weighed again from the kept outcomes of its last run (the notebook was not run again)"
        if self.way is Way.REJUDGED:
            return "judged again from the kept record of its last run (the notebook was not run again)"
        if self.way is Way.REPROBED:
            return (f"only the probes of {', '.join(self.tests)} ran again on the notebook; the other tests were "
                    f"judged from the kept record of its last run")
        return "the notebook was run again"


RUN_AGAIN = HowRegraded(Way.RUN)


def regrade_changes(result: NotebookResult, previous: dict | None, fingerprint: str,
                    digest: str | None = None, how: HowRegraded = RUN_AGAIN) -> Note | None:
    """Per test, how the score moved since the last grading by another grader (None: nothing moved), and why:
    the grader changed (a test added, removed or re-pointed by a release is named as such), or the student also
    resubmitted (then the new file may be what moved it); and `how` the result was made."""
    if previous is None or previous.get("fingerprint") == fingerprint:
        return None
    before = {t["cell_id"]: t for t in previous["result"]["tests"]}
    now = {t.cell_id for t in result.tests}
    changed = [_test_change(t, before.get(t.cell_id)) for t in result.tests]
    moved = [m for m in changed if m] + [f"{cell} removed ({old['points']:g}/{old['max_points']:g} gone)"
                                         for cell, old in before.items() if cell not in now]
    if not moved:
        return None
    total = sum(t["points"] for t in before.values())
    why = ("resubmitted, and graded by a changed grader (checks, limits or released notebook)"
           if digest is not None and previous.get("sha256") not in (None, digest)
           else "regraded with a changed grader (checks, limits or released notebook), same file")
    # The automatic points: a grade an instructor set by hand stays theirs, and the page's header shows the final one.
    return Note(NoteKind.REGRADE, f"{why}: {', '.join(moved)}; automatic total {total:g} → {result.score:g}; "
                                  f"{how.said()}")


def _test_change(test, old: dict | None) -> str | None:
    """How one test moved: new, re-pointed, scored differently, or checking a different number of input cases (None:
    unchanged)."""
    if old is None:
        return f"{test.cell_id} new ({test.points:g}/{test.max_points:g})"
    cases = _cases_change(test, old)
    if old["max_points"] != test.max_points:
        return (f"{test.cell_id} now out of {test.max_points:g} (was {old['max_points']:g}){cases}: "
                f"{old['points']:g} → {test.points:g}")
    if old["points"] != test.points:
        return f"{test.cell_id}{cases} {old['points']:g} → {test.points:g}"
    return f"{test.cell_id}{cases}, score unchanged ({test.points:g})" if cases else None


def _cases_change(test, old: dict) -> str:
    """', now N input cases (was M)' when the hidden test checks a different number of cases, else ''."""
    before, now = old.get("cases"), test.cases
    if before and now and before[1] != now[1]:
        return f", now {now[1]} input cases (was {before[1]})"
    return ""


# --- what of a notebook's last run still holds ----------------------------------------------------------------

# The code that runs a job and reads what it sends (the probes travel in the task): changed, every notebook runs again.
# The integrity evidence is made from the raw answers, which are not all kept: a new format of it runs again too.
RUN_CODE = ("sandbox", "grading/execute.py", "grading/executors.py", "records/evidence.py")


@dataclasses.dataclass(frozen=True)
class JobDigests:
    """What decides whether a notebook's last run, or a hidden test's judgement of it, still holds.

    run: what the sandbox is given and runs it with: the cells in order (a probe cell by its test's id only: its
    comment carries the points), the shipped probes, the limits, the isolation, the variant, the integrity probes'
    inputs and the code that runs and reads the job. tests: per hidden test, its probe and inputs. judge: the grading
    code with each hidden test's points left out (points only weigh an outcome: pipeline.judge applies them). inputs:
    what makes every test's inputs (inputs_digest): a kept record made under the same one holds each test's inputs
    digest as it kept it, so none is worked out again (tests is worked out on first reading)."""
    run: str
    tests: Mapping[str, str]
    judge: str
    inputs: str | None = None


class InputsDigests(Mapping[str, str]):
    """Each hidden test's inputs digest (_inputs_digest) for one variant, worked out when first read: a student's own
    inputs are built and framed for them alone, most of what preparing a notebook costs."""

    def __init__(self, ids: list[str], variant: int | None):
        self._ids, self._variant, self._found = tuple(ids), variant, {}

    def __getitem__(self, cell_id: str) -> str:
        if cell_id not in self._ids:
            raise KeyError(cell_id)
        if cell_id not in self._found:
            self._found[cell_id] = _inputs_digest(REGISTRY[cell_id], self._variant)
        return self._found[cell_id]

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def job_digests(task: GradingTask | Prepared, variant: int | None, judge: str | None = None,
                package: pathlib.Path = PACKAGE, inputs: str | None = None, run_code: str | None = None) -> JobDigests:
    """judge: judge_digest(package), inputs: inputs_digest(package), run_code: run_code_digest(package), when the
    caller has them already (each stats the files it covers)."""
    digest = hashlib.sha256()
    probe_cells = set(task.task_ids)
    cells = task.notebook.cells if isinstance(task, Prepared) else json.loads(task.notebook_json)["cells"]
    run = [[c.get("cell_type"), f"probe cell {grade_id(c)}" if grade_id(c) in probe_cells else c.get("source")]
           for c in cells]
    shared = sorted((c, _inputs_digest(REGISTRY[c], None)) for c in probe_cells if c in REGISTRY and varies(c)) \
        if SHARED_CELL in probe_cells else []
    for part in (_encoded(run), _encoded_files(tuple(sorted(task.probe_files.items()))),
                 *map(_encoded, (task.limits, task.isolate, str(variant), shared,
                                 run_code or run_code_digest(package)))):
        digest.update(part + b"\0")
    tests = InputsDigests([cell_id for cell_id in task.task_ids if cell_id in REGISTRY], variant)
    return JobDigests(digest.hexdigest(), tests, judge or judge_digest(package), inputs or inputs_digest(package))


def run_code_digest(package: pathlib.Path = PACKAGE) -> str:
    """The code that runs a job and reads what it sends (RUN_CODE), as the run digest takes it."""
    return _code_digest(package, RUN_CODE)


def _encoded(part: object) -> bytes:
    return json.dumps(part, sort_keys=True).encode("utf-8", "surrogatepass")


@functools.lru_cache(maxsize=4)
def _encoded_files(files: tuple[tuple[str, str], ...]) -> bytes:
    """The shipped probe files as the run digest takes them: the same for every notebook of a run, encoded once."""
    return _encoded(files)


@functools.lru_cache(maxsize=256)
def _inputs_digest(test, variant: int | None) -> str:
    """A hidden test's probe (module and name) and its inputs as the task frames them."""
    probe = f"{test.probe.__module__}.{test.probe.__name__}\0".encode()
    return hashlib.sha256(probe + test.inputs_frame(variant)).hexdigest()


def judge_digest(package: pathlib.Path = PACKAGE) -> str:
    """The grading code (grading_files) as parsed, each `points=` argument of a call left out: a hidden test's points
    weigh its outcome but do not make it, so changing them keeps every test's judgement (comments and layout do not
    count either). A HiddenTest's `inputs=` is left out too: JobDigests.tests has each test's inputs, so a test whose
    inputs changed is probed and judged again alone (what an inputs function calls still counts here)."""
    return _normalised_digest(package, _states(package, grading_files(package)))


def inputs_digest(package: pathlib.Path = PACKAGE) -> str:
    """What makes every hidden test's inputs, for every variant: the grading code as parsed with only `points=` left
    out (a test's inputs function, and all it calls, stays), the numpy and Python that run it (a generator's stream
    may change with numpy's version), and each registered test's inputs on the course-wide and one student's values
    (a test whose inputs are not its file's, replaced as the process runs, is seen too). The same digest, the same
    inputs: each test's inputs digest as kept stands."""
    import numpy

    digest = hashlib.sha256(_normalised_digest(package, _states(package, grading_files(package)), keep_inputs=True)
                            .encode() + f"\0numpy {numpy.__version__}\0{sys.version}".encode())
    for cell_id, test in sorted(REGISTRY.items()):
        digest.update(f"\0{cell_id} {_inputs_digest(test, None)} {_inputs_digest(test, 1)}".encode())
    return digest.hexdigest()


def _states(package: pathlib.Path, files: list[pathlib.Path]) -> tuple:
    """Each file by its place in the package, with what tells a changed file (the digests below are kept by it)."""
    return tuple((str(p.relative_to(package)), p.stat().st_mtime_ns, p.stat().st_size) for p in files)


@functools.lru_cache(maxsize=4)
def _normalised_digest(package: pathlib.Path, states: tuple, keep_inputs: bool = False) -> str:
    """Each file's normalised tree digested, recalled by the file's content from the package's own cache (parsing
    every grading file is a third of a CPU-second that each make grade paid again), then digested together.
    keep_inputs: a HiddenTest's `inputs=` stays in the tree (inputs_digest's)."""
    cache = INPUTS_PARTS_FILE if keep_inputs else PARTS_FILE
    known = _recalled_parts(package, cache)
    parts = {}
    digest = hashlib.sha256()
    for name, _, _ in states:
        data = (package / name).read_bytes()
        key = hashlib.sha256(_normaliser() + b"\0" + data).hexdigest()
        part = known.get(key) or _part(key, data, keep_inputs)
        parts[key] = part
        digest.update(name.encode() + b"\0" + part.encode() + b"\0")
    if parts != known:
        _keep_parts(package, parts, cache)
    return digest.hexdigest()


PARTS_FILE = "__pycache__/judge-digest.json"      # beside the package's bytecode: derived from its files alone
INPUTS_PARTS_FILE = "__pycache__/inputs-digest.json"


@functools.lru_cache(maxsize=1)
def _normaliser() -> bytes:
    """What a file's normalised digest is made by: this module (its _normalised_parts) and Python's ast format."""
    return pathlib.Path(__file__).read_bytes() + f"{sys.version_info[:2]}".encode()


def _recalled_parts(package: pathlib.Path, cache: str = PARTS_FILE) -> dict[str, str]:
    """sha256(normaliser, file content) -> that file's normalised digest, as kept; {} when absent, edited or cut."""
    try:
        kept = json.loads((package / cache).read_bytes())
        parts = kept["parts"]
        if kept["sha256"] != _checksum(parts) or not all(isinstance(v, str) for v in parts.values()):
            return {}
        return dict(parts)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _keep_parts(package: pathlib.Path, parts: dict[str, str], cache: str = PARTS_FILE) -> None:
    try:
        write_replacing(package / cache, json.dumps({"parts": parts, "sha256": _checksum(parts)}).encode())
    except OSError:
        pass                                      # a package installed read-only: parsed again next time


def _checksum(parts: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


# The other digest's part of each file a digest parsed: (file key, keep_inputs) -> part. A run asks judge_digest and
# inputs_digest one after the other, and a fresh copy of the course keeps no parts: each grading file is parsed once
# between them. Each part is taken once (a digest asked alone parses as it always did); bounded.
_OTHER_HALF: dict[tuple[str, bool], str] = {}
MAX_OTHER_HALF = 1024


def _part(key: str, data: bytes, keep_inputs: bool) -> str:
    """The file's normalised part for one digest (its key: sha256 of the normaliser and `data`)."""
    found = _OTHER_HALF.pop((key, keep_inputs), None)
    if found is not None:
        return found
    judge, inputs = _normalised_parts(data)
    if len(_OTHER_HALF) >= MAX_OTHER_HALF:
        _OTHER_HALF.clear()
    _OTHER_HALF[(key, not keep_inputs)] = judge if keep_inputs else inputs
    return inputs if keep_inputs else judge


def _normalised_parts(data: bytes) -> tuple[str, str]:
    """The file's tree digested with every `points=` argument of a call left out, and then also each HiddenTest's
    `inputs=`: (judge part, inputs part), from one parse."""
    tree = ast.parse(data)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    for node in calls:
        node.keywords = [k for k in node.keywords if k.arg != "points"]
    inputs = hashlib.sha256(ast.dump(tree).encode()).hexdigest()
    for node in calls:
        if isinstance(node.func, ast.Name) and node.func.id == "HiddenTest":
            node.keywords = [k for k in node.keywords if k.arg != "inputs"]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest(), inputs


def _code_digest(package: pathlib.Path, names: tuple[str, ...]) -> str:
    files = []
    for name in names:
        path = package / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return _file_digest(package, _states(package, files))


@functools.lru_cache(maxsize=4)
def _file_digest(package: pathlib.Path, states: tuple) -> str:
    digest = hashlib.sha256()
    for name, _, _ in states:
        digest.update(name.encode() + b"\0" + (package / name).read_bytes() + b"\0")
    return digest.hexdigest()
