"""What grading produces, as data: a graded test, a notebook's result, a note with its kind, a problem
with its cause. Grading writes these; records store them; reports, the dashboard and feedback read
their fields (never the wording of another module's sentences).
"""
from __future__ import annotations

import dataclasses
import enum


class NoteKind(str, enum.Enum):
    """What a note about a notebook's grading says happened; the dashboard and reports group by it."""
    SUBMISSION = "submission"            # intake: renamed, missing, a link instead of a folder
    UNREADABLE = "unreadable"            # the notebook could not be read (JSON, size, cells)
    ASSEMBLY = "assembly"                # read-only cells restored or edited, answer cells deleted, cells added
    EDITED_READ_ONLY = "edited_read_only"
    CRASHED = "crashed"                  # the kernel died in a cell
    TIMEOUT = "timeout"                  # a cell or the notebook ran out of time
    OUTPUT_FLOOD = "output_flood"
    MEMORY = "memory"
    GRADER_ERROR = "grader_error"        # the grader, not the student
    FIX_FIRST = "fix_first"              # one diagnosed cause explains several failures
    BROKEN_CELL = "broken_cell"          # an answer cell did not run (SyntaxError, an exception while defining)
    RAISED_AFTER_DEFINING = "raised_after_defining"   # an answer cell defined its functions, then a later line raised
    SKIPPED_MAGIC = "skipped_magic"      # a magic or `!cmd` the grader does not run; the rest of the cell ran
    SCORES_KEPT = "scores_kept"          # a rerun scored lower on an unchanged file; the higher scores stay
    REGRADE = "regrade"                  # a changed grader moved the score
    OTHER = "other"


class Note(str):
    """A sentence for the student and the run report, with the kind of event it reports."""
    kind: NoteKind

    def __new__(cls, kind: NoteKind, text: str) -> "Note":
        note = super().__new__(cls, text)
        note.kind = NoteKind(kind)
        return note

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __getnewargs__(self):           # copies and pickles (Dask) keep the kind
        return self.kind, self.text

    def to_json(self) -> dict:
        return {"kind": self.kind.value, "text": self.text}

    @classmethod
    def from_json(cls, data) -> "Note":
        """A stored note; a plain string (results stored before notes had kinds) is OTHER."""
        if isinstance(data, dict):
            return cls(NoteKind(data.get("kind", "other")), str(data.get("text", "")))
        return cls(NoteKind.OTHER, str(data))


class Problem(str):
    """What a failed test says to the student, with the diagnosed cause when one was recognised (the
    cause is what "Fix this first" and the dashboard group by)."""
    cause: str | None

    def __new__(cls, text: str, cause: str | None = None) -> "Problem":
        problem = super().__new__(cls, text)
        problem.cause = cause
        return problem

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __getnewargs__(self):
        return self.text, self.cause

    def to_json(self) -> dict | str:
        return {"text": self.text, "cause": self.cause} if self.cause else self.text

    @classmethod
    def from_json(cls, data) -> "Problem":
        if isinstance(data, dict):
            return cls(str(data.get("text", "")), data.get("cause"))
        return cls(str(data))


@dataclasses.dataclass
class GradedTest:
    cell_id: str
    title: str
    hidden: bool
    points: float
    max_points: float
    problems: list[str]
    cases: tuple[int, int] | None = None     # (passed, judged) for a hidden test; feedback shows them

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "problems": [Problem.to_json(p) if isinstance(p, Problem) else p
                                                          for p in self.problems]}

    @classmethod
    def from_json(cls, data: dict) -> "GradedTest":
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
    action: str = ""                  # what the student (or instructor) should do about the notes

    @property
    def score(self) -> float:
        return sum(t.points for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_points for t in self.tests)

    def notes_of(self, *kinds: NoteKind) -> list[Note]:
        return [n for n in self.notes if getattr(n, "kind", NoteKind.OTHER) in kinds]

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "tests": [t.to_json() for t in self.tests],
                "notes": [Note.to_json(n) if isinstance(n, Note) else n for n in self.notes]}

    @classmethod
    def from_json(cls, data: dict) -> "NotebookResult":
        return cls(**{**data, "tests": [GradedTest.from_json(t) for t in data["tests"]],
                      "notes": [Note.from_json(n) for n in data["notes"]]})
