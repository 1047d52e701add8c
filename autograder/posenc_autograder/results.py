"""What grading produces, as data: a graded test, a notebook's result, a note with its kind, a problem
with its cause. Grading writes these; records store them; reports, the dashboard and feedback read
their fields (never the wording of another module's sentences).
"""
from __future__ import annotations

import dataclasses
import enum
import itertools
import re
from typing import Any


class NoteKind(str, enum.Enum):
    """What a note about a notebook's grading says happened; the dashboard and reports group by it, and who it asks
    to act (`asks`) decides whether the run report lists the student and what it says to do."""
    SUBMISSION = "submission"            # intake: renamed, missing, a link instead of a folder
    UNREADABLE = "unreadable"            # the notebook could not be read (JSON, size, cells)
    ASSEMBLY = "assembly"                # read-only cells restored or edited, answer cells deleted, cells added
    EDITED_READ_ONLY = "edited_read_only"
    CRASHED = "crashed"                  # the kernel died in a cell
    TIMEOUT = "timeout"                  # a cell or the notebook ran out of time
    OUTPUT_FLOOD = "output_flood"        # the notebook sent more than the grader reads: the tests after it score 0
    OUTPUT_CUT = "output_cut"            # a cell printed more than the notebook keeps; the rest was dropped
    UNREADABLE_DATA = "unreadable_data"  # the notebook's code sent the grader data it could not read (forged, huge)
    MEMORY = "memory"
    GRADER_ERROR = "grader_error"        # the grader, not the student
    FIX_FIRST = "fix_first"              # one diagnosed cause explains several failures
    BROKEN_CELL = "broken_cell"          # an answer cell did not run (SyntaxError, an exception while defining)
    RAISED_AFTER_DEFINING = "raised_after_defining"   # an answer cell defined its functions, then a later line raised
    OWN_CELL_RAISED = "own_cell_raised"  # a cell without nbgrader metadata (added, or the scratch cell) raised
    SKIPPED_MAGIC = "skipped_magic"      # a magic or `!cmd` the grader does not run; the rest of the cell ran
    REDEFINED = "redefined"              # a later cell defines a graded function again: its version was graded
    SCORES_KEPT = "scores_kept"          # a rerun scored lower on an unchanged file; the higher scores stay
    REGRADE = "regrade"                  # a changed grader moved the score
    OTHER = "other"

    @property
    def asks(self) -> Asked:
        """Who this kind of note asks to act: a note that only informs (the grade stands as it is and nothing in the
        notebook needs mending) asks nobody. A kind not named here asks the student. A submission note asks nobody
        of itself: the ones that matter (a notebook missing, a link) leave it ungraded, which asks the student."""
        return ASKED.get(self, Asked.STUDENT)

    @property
    def tells(self) -> Told:
        """What a student learns from this kind of note that a view may keep from them: the hidden tests' diagnosis
        (a cause found by judging), or points. A kind not named here tells what the student's own notebook did when
        it ran (a cell that did not run, a magic skipped, a timeout), which they see by running it: no view keeps it."""
        return TOLD.get(self, Told.RUN)


class Asked(str, enum.Enum):
    """Who a note asks to act on it."""
    NOBODY = "nobody"            # it only informs
    STUDENT = "student"
    INSTRUCTOR = "instructor"


ASKED = {NoteKind.GRADER_ERROR: Asked.INSTRUCTOR,
         **dict.fromkeys((NoteKind.SUBMISSION, NoteKind.ASSEMBLY, NoteKind.EDITED_READ_ONLY, NoteKind.OUTPUT_CUT,
                          NoteKind.SKIPPED_MAGIC, NoteKind.REDEFINED, NoteKind.SCORES_KEPT, NoteKind.REGRADE),
                         Asked.NOBODY)}


class Told(str, enum.Enum):
    """What a note tells a student (NoteKind.tells): what a feedback view that withholds diagnoses or points
    withholds of the notes."""
    RUN = "run"                  # what their notebook did when it ran: shown in every view
    DIAGNOSIS = "diagnosis"      # what the hidden tests found wrong: shown where diagnoses are
    POINTS = "points"            # scores, or that one moved: shown where points are


TOLD = {NoteKind.FIX_FIRST: Told.DIAGNOSIS, NoteKind.REGRADE: Told.POINTS, NoteKind.SCORES_KEPT: Told.POINTS}


PROSE_NUMBERS = 16       # numbers a sentence a student reads may hold; a longer quote is summarised in it
QUOTE_NUMBERS = 12       # of them, what a quote of the student's own output may take (the sentence has its own)
# Possessive: one way to read each number, so a long run of digits or brackets is never tried a second time.
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][-+]?\d++)?+(?![\w.])")
SEPARATORS = frozenset(" \t\n\r\f\v,;[]")        # between the numbers of a printed array
RUN_NUMBERS = 4                                 # numbers in a row that make an array


def summarised(text: str, numbers: int = QUOTE_NUMBERS) -> str:
    """What a student's code printed or raised, as a sentence can carry it: each run of numbers (a printed array, over
    as many lines as numpy wrapped it) as its count, whitespace collapsed (a self-check's message is wrapped at any
    word), and cut after its first `numbers` numbers, at the end of that sentence when it holds no more (the text in
    full goes beside it, in `quoted`, for the page to fold)."""
    flat = " ".join(_runs_counted(str(text)).split())
    ends = [found.end() for found in NUMBER.finditer(flat)]
    if len(ends) <= numbers:
        return flat
    cut = ends[numbers - 1]
    sentence = re.search(r"[.;)](?=\s|$)", flat[cut:ends[numbers]])
    return flat[:cut + (sentence.end() if sentence else 0)] + " ..."


def _runs_counted(text: str) -> str:
    """The text with each run of RUN_NUMBERS or more numbers (separated by blanks, commas, semicolons or brackets,
    with the brackets that open it) as its count, keeping the space that followed it. One pass over the numbers:
    a pattern for the whole run backtracked over every start inside a long run of brackets or digits."""
    pieces, done = [], 0
    first = last = count = 0                    # the run being read: where its first number starts, its last ends
    for found in itertools.chain(NUMBER.finditer(text), [None]):      # streamed: no list of every number
        if found is not None and count and SEPARATORS.issuperset(text[last:found.start()]):
            last, count = found.end(), count + 1
            continue
        if count >= RUN_NUMBERS:
            start, end = _opening_brackets(text, first, done), last
            while end < len(text) and text[end] in SEPARATORS:
                end += 1
            pieces += [text[done:start], f"[{count} numbers]" + (" " if text[end - 1].isspace() else "")]
            done = end
        first, last, count = (found.start(), found.end(), 1) if found is not None else (0, 0, 0)
    return "".join(pieces) + text[done:]


def _opening_brackets(text: str, first: int, floor: int) -> int:
    """Where a run that starts with the number at `first` begins: at the first "[" of the brackets and spaces just
    before it (not before `floor`, the end of the run before)."""
    start = first
    while start > floor and text[start - 1] in "[ ":
        start -= 1
    opening = text.find("[", start, first)
    return first if opening < 0 else opening


MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(\w+)")


def missing_module_hint(error: str) -> str | None:
    """What a student should know of an import that failed in the grader ('ModuleNotFoundError: No module named ...'),
    which works where they installed the package or keep a file of their own beside the notebook; None otherwise."""
    found = MISSING_MODULE.search(error)
    return None if found is None else (
        f"`{found.group(1)}` is not installed in the grader, which has only the course's packages and no file of "
        f"yours but the notebook: remove that import and write that part with numpy, all the assignment needs")


def quote(text: str) -> tuple[str, str | None]:
    """(the summary for the sentence, the whole text for a folded block when the summary leaves something out)."""
    short = summarised(text)
    return short, (None if short == " ".join(str(text).split()) else str(text))


@dataclasses.dataclass(frozen=True)
class Note:
    """A sentence for the student and the run report, with the kind of event it reports (what pages, reports and
    the dashboard decide by), and, when the sentence summarises what the student's code printed or raised, that
    text in full (bounded where it was captured; the page folds it), the index of the notebook's cell it is
    about, if one (what orders the notes the student reads), and the cause it reports when tests fail for it (the
    Problem.cause of their problems: an answer cell that did not run), by which the feedback page knows whether it
    still costs points once an instructor has set some by hand."""
    kind: NoteKind
    text: str
    quoted: str | None = None
    cell: int | None = None
    cause: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", NoteKind(self.kind))

    def __str__(self) -> str:
        return self.text

    def to_json(self) -> dict[str, str | int]:
        return {"kind": self.kind.value, "text": self.text, **({"quoted": self.quoted} if self.quoted else {}),
                **({"cell": self.cell} if self.cell is not None else {}),
                **({"cause": self.cause} if self.cause is not None else {})}

    @classmethod
    def from_json(cls, data: object) -> Note:
        """A stored note; a plain string (results stored before notes had kinds) is OTHER."""
        if isinstance(data, dict):
            quoted, cell, cause = data.get("quoted"), data.get("cell"), data.get("cause")
            return cls(NoteKind(data.get("kind", "other")), str(data.get("text", "")),
                       str(quoted) if quoted is not None else None, cell if isinstance(cell, int) else None,
                       str(cause) if cause is not None else None)
        return cls(NoteKind.OTHER, str(data))


LEADING = frozenset({NoteKind.FIX_FIRST, NoteKind.BROKEN_CELL})     # "Fix this first": they open the notes


def in_cell_order(notes: list[Note]) -> list[Note]:
    """The notes as a student reads the notebook, top to bottom: those about a cell in the order of their cells (in
    the places such notes held), those about none, and the ones that say to fix them first, where they were."""
    placed = [note.cell is not None and note.kind not in LEADING for note in notes]
    ordered = iter(sorted((n for n, p in zip(notes, placed, strict=True) if p), key=lambda n: n.cell or 0))
    return [next(ordered) if p else n for n, p in zip(notes, placed, strict=True)]


class ProblemKind(str, enum.Enum):
    """What a problem of a test is; pages and the dashboard decide by it, never by the sentence."""
    VALUE = "value"                  # a hidden test judged an answer wrong
    MORE = "more"                    # "... and 3 more cases like these": a count, not an example
    RAISED = "raised"                # a visible self-check cell raised (error: the exception's name)
    SELF_CHECK = "self_check"        # a visible self-check printed failures without raising
    NOT_RUN = "not_run"              # the test did not run (the notebook could not be graded, or stopped)
    NOT_JUDGED = "not_judged"        # its answer cell did not run ("Fix this first" says why), or its contract waits
                                     # for its function's own tests, which met the template stub
    WITHHELD = "withheld"            # the portal shows pass or fail only until the deadline


STUB_ERROR = "NotImplementedError"     # what the template's stubs raise: a part not attempted, whatever its inputs
SEE_FIX_FIRST = '; see "Fix this first" above'     # how a problem not judged ends: its cause's note says the rest
FIX_THIS_FIRST = "Fix this first: "                 # how an answer cell's note that did not run starts, its cause next


@dataclasses.dataclass(frozen=True)
class Problem:
    """What a failed test says to the student, as data: the sentence, the diagnosed cause when one was recognised
    (what "Fix this first" and the dashboard group by), its kind, the failing call and what came back at the
    worst entry (`details`: function, args, where, expected, got, tolerance, dtype; pages render them), the
    student's own drawn inputs (shown only when the policy allows), the lines that reproduce the failing case
    (`call`, a Reproduction: each array argument by its place in `inputs`, with its shape and dtype), the
    exception's name for a raise, what the student's code raised or printed in full when the sentence summarises it
    (`quoted`; the page folds it), and whether the cause is a described pattern of the difference rather than a
    diagnosed mistake (`pattern`: a diagnosis of the same failure elsewhere is the one the dashboard and the
    contracts test name), and whether any input shown has values drawn for this student (`drawn`: False when every
    one is the same for every student; None when not known, as in results stored before)."""
    text: str
    cause: str | None = None
    kind: ProblemKind = ProblemKind.VALUE
    details: dict[str, Any] | None = None
    inputs: list[Any] | None = None  # the failing case's input arrays (nested lists), the student's own variant
    error: str | None = None
    call: Reproduction | None = None
    quoted: str | None = None
    pattern: bool | None = None      # True: the cause describes the difference's shape, no known mistake matched
    drawn: bool | None = None        # True: some shown input is drawn per student; False: every one is everyone's

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ProblemKind(self.kind))
        if isinstance(self.call, dict):              # as stored
            object.__setattr__(self, "call", Reproduction.from_json(self.call))

    def __str__(self) -> str:
        return self.text

    @property
    def at_stub(self) -> bool:
        """The call reached the template's stub: any inputs of the same shapes fail it the same way."""
        return self.error == STUB_ERROR

    def to_json(self) -> dict[str, Any]:
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {k: (v.value if isinstance(v, enum.Enum) else v.to_json() if isinstance(v, Reproduction) else v)
                for k, v in fields.items() if v is not None}

    @classmethod
    def from_json(cls, data: object) -> Problem:
        """A stored problem; a plain string (results stored before problems had fields) is its text."""
        if isinstance(data, dict):
            known = {f.name for f in dataclasses.fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in known and v is not None})
        return as_problem(data)


LEGACY_MORE = "... and "      # how a count of further cases read in results stored before problems had kinds


def as_problem(value: object) -> Problem:
    """A problem as data; a plain string (a result stored before problems had fields) is its text."""
    if isinstance(value, Problem):
        return value
    text = str(value)
    return Problem(text, kind=ProblemKind.MORE if text.startswith(LEGACY_MORE) else ProblemKind.VALUE)


def _shallow(value: GradedTest | NotebookResult) -> dict[str, Any]:
    """A dataclass's fields as they are: to_json replaces the ones holding objects (dataclasses.asdict would deep-copy
    every problem of every test first, only for it to be replaced)."""
    return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}


@dataclasses.dataclass
class GradedTest:
    cell_id: str
    title: str
    hidden: bool
    points: float
    max_points: float
    problems: list[Problem]
    cases: tuple[int, int] | None = None     # (passed, judged) for a hidden test; feedback shows them

    def __post_init__(self) -> None:
        self.problems = [as_problem(p) for p in self.problems]

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {**_shallow(self), "problems": [as_problem(p).to_json() for p in self.problems]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GradedTest:
        cases = data.get("cases")
        return cls(**{**data, "problems": [Problem.from_json(p) for p in data["problems"]],
                      "cases": tuple(cases) if cases else None})


@dataclasses.dataclass
class NotebookResult:
    student: str
    assignment: str
    notebook: str
    graded: bool                      # False: nothing could be run (missing or unreadable file)
    tests: list[GradedTest]
    notes: list[Note]                 # what happened, for the student and the run report
    seconds: float = 0.0
    untouched: bool | None = None     # its answer cells are the released template's, found while grading (None: no
                                      # notebook was run)

    def __post_init__(self) -> None:
        self.notes = [n if isinstance(n, Note) else Note(NoteKind.OTHER, str(n)) for n in self.notes]

    @property
    def score(self) -> float:
        return sum(t.points for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_points for t in self.tests)

    def notes_of(self, *kinds: NoteKind) -> list[Note]:
        return [n for n in self.notes if n.kind in kinds]

    @property
    def action(self) -> str:
        """What someone must do about this notebook, from its notes' kinds (NoteKind.asks), whenever they were added
        (a regrade's note comes after grading); '' when nobody must: its notes only inform, and failed tests say
        what they found on the feedback page."""
        asked = {note.kind.asks for note in self.notes}
        if Asked.INSTRUCTOR in asked:
            return "instructor: the grader failed, not the student; see the note, fix and run `make grade` again"
        if not self.graded:
            return "student: submit a readable notebook with its original name"
        if Asked.STUDENT in asked:
            return "student: read the notes in the feedback" + (
                "; failed tests say what to fix" if any(not t.passed for t in self.tests) else "")
        return ""

    def to_json(self) -> dict[str, Any]:
        return {**_shallow(self), "tests": [t.to_json() for t in self.tests],
                "notes": [n.to_json() for n in self.notes]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NotebookResult:
        data = {key: value for key, value in data.items() if key != "action"}    # stored before it was derived
        tests = [GradedTest.from_json(t) for t in data["tests"]]
        return cls(**{**data, "tests": tests, "notes": with_stated_causes([Note.from_json(n) for n in data["notes"]],
                                                                          tests)})


def with_stated_causes(notes: list[Note], tests: list[GradedTest]) -> list[Note]:
    """The notes, each answer cell's note stored before notes had causes given the cause its tests not judged name,
    the one its sentence states after "Fix this first: " (so a page made again after grading by hand says it only
    while it costs points, without a regrade)."""
    if all(note.kind is not NoteKind.BROKEN_CELL or note.cause is not None for note in notes):
        return notes
    causes = {p.cause for t in tests for p in t.problems if p.kind is ProblemKind.NOT_JUDGED and p.cause}
    return [dataclasses.replace(note, cause=next((c for c in sorted(causes)
                                                  if note.text.startswith(f"{FIX_THIS_FIRST}{c}, ")), None))
            if note.kind is NoteKind.BROKEN_CELL and note.cause is None else note for note in notes]


# --- a failing case as lines of code: what the page writes out so that the student can reproduce it ---------------

@dataclasses.dataclass(frozen=True)
class Seeded:
    """A generator argument, written `np.random.default_rng(seed)`."""
    seed: int


@dataclasses.dataclass(frozen=True)
class Zeros:
    """An all-zero array argument, written `np.zeros(shape)` (with its dtype when it is not float64)."""
    shape: tuple[int, ...]
    dtype: str = "float64"


@dataclasses.dataclass(frozen=True)
class Unshown:
    """An argument that is no array nor number (the grader's encoder, say): a name the lines need, which the page
    describes in words (`what`), since no line can build it."""
    name: str
    what: str


@dataclasses.dataclass(frozen=True)
class InputArray:
    """An array argument by its place among the problem's `inputs`: written in full when the student may see it (their
    own variant, small enough), else named `input<place + 1>` with its shape and dtype, never its values."""
    place: int
    shape: tuple[int, ...]
    dtype: str


Scalar = bool | int | float | str | None
Argument = Scalar | Seeded | Zeros | Unshown | InputArray
SCALARS = (bool, int, float, str, type(None))


@dataclasses.dataclass(frozen=True)
class Reading:
    """A line that reads a value (say, `layer.grad_embedding`): the value judged."""
    target: str


@dataclasses.dataclass(frozen=True)
class Setting:
    """A line `target = value` (say, `layer.embedding = <the table the probe set>`)."""
    target: str
    value: Argument


@dataclasses.dataclass(frozen=True)
class Step:
    """A line `assign = function(*args, **kwargs)` (function may be a method: `layer.forward`; no `assign =`: None)."""
    function: str
    args: tuple[Argument, ...] = ()
    kwargs: dict[str, Argument] = dataclasses.field(default_factory=dict)
    assign: str | None = None


Line = Step | Setting | Reading


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A failing case as the lines of code that reproduce it (a call; or an instance built, stepped and read), and the
    student functions the grader replaced with stand-ins while the case ran (the page says the lines run the
    student's own). Built by checks.reproduction, written out by the feedback page (reports.templating.snippet)."""
    lines: tuple[Line, ...]
    stand_ins: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"lines": [_line_json(line) for line in self.lines],
                **({"stand_ins": list(self.stand_ins)} if self.stand_ins else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reproduction:
        """A stored reproduction; a stored single call ({"function", "args", "kwargs"}, results stored before
        reproductions were lines) is its one line."""
        lines = data["lines"] if "lines" in data else [{"call": data["function"], "args": data["args"],
                                                         "kwargs": data["kwargs"]}]
        return cls(tuple(_line_from_json(line) for line in lines), tuple(str(s) for s in data.get("stand_ins", ())))


def _argument_json(value: Argument) -> object:
    if isinstance(value, Seeded):
        return {"default_rng": value.seed}
    if isinstance(value, Zeros):
        return {"zeros": list(value.shape), **({"dtype": value.dtype} if value.dtype != "float64" else {})}
    if isinstance(value, Unshown):
        return {"object": value.name, "what": value.what}
    if isinstance(value, InputArray):
        return {"input": value.place, "shape": list(value.shape), "dtype": value.dtype}
    return value


def _argument_from_json(data: object) -> Argument:
    if isinstance(data, SCALARS):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"not an argument of a reproduction: {type(data).__name__}")
    if "default_rng" in data:
        return Seeded(int(data["default_rng"]))
    if "zeros" in data:
        return Zeros(tuple(int(n) for n in data["zeros"]), str(data.get("dtype", "float64")))
    if "object" in data:
        return Unshown(str(data["object"]), str(data["what"]))
    return InputArray(int(data["input"]), tuple(int(n) for n in data["shape"]), str(data["dtype"]))


def _line_json(line: Line) -> dict[str, object]:
    if isinstance(line, Setting):
        return {"set": line.target, "value": _argument_json(line.value)}
    if isinstance(line, Reading):
        return {"get": line.target}
    return {"call": line.function, "args": [_argument_json(a) for a in line.args],
            "kwargs": {k: _argument_json(v) for k, v in line.kwargs.items()},
            **({"assign": line.assign} if line.assign else {})}


def _line_from_json(data: dict[str, Any]) -> Line:
    if "set" in data:
        return Setting(str(data["set"]), _argument_from_json(data["value"]))
    if "get" in data:
        return Reading(str(data["get"]))
    return Step(str(data["call"]), tuple(_argument_from_json(a) for a in data["args"]),
                {str(k): _argument_from_json(v) for k, v in data["kwargs"].items()},
                str(data["assign"]) if data.get("assign") else None)
