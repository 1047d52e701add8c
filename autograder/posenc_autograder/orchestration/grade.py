"""`make grade`: every submission under autograder/submitted → gradebook, feedback, grades.csv, report.

    python -m posenc_autograder grade [--jobs N] [--assignment A] [--student S] [--force]
                                      [--no-sandbox] [--scheduler tcp://host:8786] [--db-url URL]

Exit status: 0 when every submission was graded or is reported as the student's own problem (a missing or broken
notebook: a blank score and "Not graded: <reason>"; the student's, not the run's, so `make grade && make feedback`
goes on), 1 when the grader itself failed on a submission (a grader error) or nothing was submitted, 2 when grading
could not start (no sandbox on this machine).
"""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING, Any

from posenc_autograder import settings, words
from posenc_autograder.checks import variants
from posenc_autograder.course import CONFIG, RELEASE_DIRECTORY, SOURCE_DIRECTORY, Course, course_for_command
from posenc_autograder.grading import costs, regrade, reprobe
from posenc_autograder.grading.execute import Execution, GradingTask, execute_task
from posenc_autograder.grading.executors import default_jobs, run_dask, run_local
from posenc_autograder.grading.pipeline import (
    Prepared,
    graded_checks,
    grader_error,
    judge,
    judged_tests,
    prepare_run,
    probe_files,
)
from posenc_autograder.grading.regrade import PACKAGE, HowRegraded, JobDigests, Way, grader_fingerprint
from posenc_autograder.intake import attempts, exchange
from posenc_autograder.intake.submissions import Submission, discover, sha256
from posenc_autograder.progress import Progress
from posenc_autograder.records import database, results_store, stamps
from posenc_autograder.results import NotebookResult
from posenc_autograder.sandbox import warm
from posenc_autograder.sandbox.bubblewrap import SandboxUnavailable, check_sandbox
from posenc_autograder.sandbox.cgroups import process_limit_enforced
from posenc_autograder.settings import Limits

if TYPE_CHECKING:
    from posenc_autograder.orchestration.ahead import Ahead
    from posenc_autograder.records import graded
    from posenc_autograder.records.kept_records import Recalled

# The gradebook (nbgrader, SQLAlchemy), the reports and the release check (nbgrader's preprocessors) are
# imported where they are used: a run with nothing to grade needs none of them, and importing them costs
# over a CPU-second.


Found = dict[tuple[str, str], dict[str, str]]    # (student, assignment) -> attempts.in_submitted's: name -> sha256


def place_counted(course: Course, assignments: list[str] | None = None, students: list[str] | None = None,
                  found: Found | None = None) -> set[tuple[str, str]]:
    """Apply [course] counted_attempt to every student's attempts from every door (intake/attempts.py): a file put
    in submitted/ by hand is recorded first; submitted/ then holds an attempt still to be graded, else the one that
    counts. Returns the (student, assignment) whose submitted/ changed. A folder `nbgrader collect` wrote (it holds
    the exchange's submission secret) is recorded as the exchange's, at the time nbgrader's submit wrote. `found`
    (when given) receives what each folder of submitted/ holds afterwards, each file hashed once (the round's
    digests)."""
    from posenc_autograder.reports import late_policy

    rule, deadlines = settings.load(course).course.counted_attempt, late_policy.Deadlines(course)
    keys = set(attempts.everyone(course))
    if course.submitted.is_dir():
        keys |= {(p.parent.name, p.name) for p in course.submitted.glob("*/*") if p.is_dir() and not p.is_symlink()}
    changed = set()
    for student, assignment in sorted(keys):
        if (students and student not in students) or (assignments and assignment not in assignments) \
                or assignment not in course.assignments():
            continue
        try:
            exchange.record_collected(course, student, assignment)      # `nbgrader collect`'s: the exchange's door
            here = attempts.in_submitted(course, student, assignment)   # read and hashed once for what follows
            recorded = attempts.of(course, student, assignment)           # read again only if a file was recorded
            if attempts.record_hand_placed(course, student, assignment, here, recorded) is not None:
                recorded = attempts.of(course, student, assignment)
        except ValueError:
            continue                                      # not a safe folder: discover() reports it
        target = attempts.next_in_submitted(recorded, rule, deadlines.attempt_percent)
        if target is not None and attempts.place(course, target, here):
            changed.add((student, assignment))
            here = dict(target.files)                     # what place() wrote: the attempt's files, as recorded
        if found is not None:
            found[(student, assignment)] = here
    return changed


def grade_all(course: Course, *, jobs: int, isolate: bool = True, force: bool = False,
              assignments: list[str] | None = None, students: list[str] | None = None,
              scheduler: str | None = None, limits: Limits | None = None, quiet: bool = False,
              class_made: list[results_store.ClassResults] | None = None) -> list[NotebookResult]:
    """Grade what was asked, every door's attempts included: each attempt the counting rule needs points of is
    graded in turn, then the one that counts is in submitted/ and graded; the class-wide files always cover the
    whole class (stored results merged in). limits: the sandbox's, by default the course's ([sandbox]). class_made
    (when given) receives the class the last round's class files were made from (nothing when they stood as they
    were): every stored result, as reading them all again would find them."""
    found: Found = {}
    place_counted(course, assignments, students, found)
    rounds = 1 + sum(len(attempted) for attempted in attempts.everyone(course).values())
    for _ in range(rounds):
        if class_made is not None:
            class_made.clear()
        results = _grade_round(course, jobs=jobs, isolate=isolate, force=force, assignments=assignments,
                               students=students, scheduler=scheduler, limits=limits, quiet=quiet, found=found,
                               class_made=class_made)
        found = {}
        if not place_counted(course, assignments, students, found):
            return results
        force = False
    return results


def _grade_round(course: Course, *, jobs: int, isolate: bool, force: bool, assignments, students, scheduler,
                 limits: Limits | None, quiet: bool, found: Found | None = None,
                 class_made: list[results_store.ClassResults] | None = None) -> list[NotebookResult]:
    limits = limits or settings.load(course).sandbox
    refused: list[str] = []
    submissions = discover(course, assignments, students, refused)
    for reason in refused:
        print(f"Not graded: submitted/{reason}", file=sys.stderr)
    fingerprints = {a: grader_fingerprint(course, a, limits) for a in {s.assignment for s in submissions}}
    digests = [_digest(course, sub, found or {}) for sub in submissions]
    # Each stored record is read once: the result of an unchanged file and grader, else None (a notebook re-judged by
    # another process is compared with the record as read here; --force reads none here).
    records: list[Any] = [UNREAD if force else results_store.load(results_store.path(course, *sub.key))
                          for sub in submissions]
    # A file handed in again by another door, whose attempt counts, is stored again at that attempt's time.
    kept = [None if record is UNREAD or attempts.time_restated(course, sub.student, sub.assignment)
            else _unchanged(record, digest, fingerprints[sub.assignment])
            for sub, digest, record in zip(submissions, digests, records, strict=True)]
    unchanged = [result is not None for result in kept]
    for sub, digest, result in zip(submissions, digests, kept, strict=True):
        if result is not None and digest:
            attempts.scored(course, sub.student, sub.assignment, digest, result.score, result.max_score)
    if all(unchanged):
        # Nothing to grade: the class files stand if nothing they are made from changed either.
        stamp = class_files_stamp(course, submissions, digests, fingerprints, refused)
        if stamp is not None and stamps.recall(course, CLASS_FILES, stamp):
            return sorted((r for r in kept if r is not None), key=lambda r: (r.student, r.assignment, r.notebook))
    stamps.forget(course, CLASS_FILES)
    zygote = isolate and scheduler is None and _runs_a_job(submissions, digests, records)
    if zygote:
        warm.start_early(probe_files())       # while the gradebook is made and the grader digested
    from posenc_autograder.reports import feedback, late_policy
    page = feedback.page_writer(course, late_policy.Deadlines(course))        # one late policy for the round
    planned = list(zip(submissions, digests, kept, records, strict=True))
    code = RunCode(regrade.judge_digest(), regrade.inputs_digest(), regrade.run_code_digest())    # once a round
    rejudging = not force and not scheduler
    # The processes re-judging ahead are forked before the gradebook is imported and opened: they work while this
    # process makes it ready. A fork waits for a zygote starting: then they are forked once the gradebook is ready.
    ahead = _rejudging_ahead(course, planned, limits, isolate, code, jobs, fingerprints, page) \
        if rejudging and not zygote else None
    try:
        from posenc_autograder.records import gradebook, graded

        for assignment in sorted({s.assignment for s in submissions}):
            gradebook.register(course, assignment)
        with gradebook.open_gradebook(course) as gb:
            for assignment in sorted({s.assignment for s in submissions}):     # new students' rows in one commit
                gradebook.add_submissions(gb, assignment, [s.student for s, same in zip(submissions, unchanged,
                                                                                        strict=True)
                                                           if s.assignment == assignment and not same])
            if rejudging and zygote:
                ahead = _rejudging_ahead(course, planned, limits, isolate, code, jobs, fingerprints, page)
            batch = graded.Batch(gb)              # what is stored whole is committed, a Ctrl-C included
            try:
                results = _grade_submissions(course, batch, planned, fingerprints, page, code, ahead, jobs=jobs,
                                             isolate=isolate, scheduler=scheduler, limits=limits, quiet=quiet,
                                             force=force)
            finally:
                batch.close()
    finally:
        if ahead is not None:
            ahead.close()
    from posenc_autograder.orchestration.class_files import rebuild_class_files

    made = rebuild_class_files(course, results, refused,     # each result's file as stored: its digest, not read again
                               {s.key: results_store.GradedFile(d) for s, d in zip(submissions, digests, strict=True)},
                               found)                        # submitted/ as place_counted hashed it for the round
    if class_made is not None:
        class_made.append(made)
    stamp = class_files_stamp(course, submissions, digests, fingerprints, refused)
    if stamp is not None:
        stamps.remember(course, CLASS_FILES, stamp)
    # The integrity report compares every pair of students (quadratic in the class): `make integrity`.
    return results


CLASS_FILES = "class-files"
PACKAGE_FILES = "*.py"


def _digest(course: Course, sub: Submission, found: Found) -> str | None:
    """The sha256 of the file to grade: as place_counted hashed it just before the round, else read now."""
    if sub.path is None:
        return None
    if sub.path.parent == course.submitted / sub.student / sub.assignment \
            and sub.path.name in found.get((sub.student, sub.assignment), {}):
        return found[(sub.student, sub.assignment)][sub.path.name]
    return sha256(sub.path)


UNREAD = object()                # a stored record not read yet (a --force run reads each as its notebook is graded)


def _runs_a_job(submissions: list[Submission], digests: list[str | None], records: list[Any]) -> bool:
    """Whether some notebook of the round surely runs in the sandbox: --force, or a file with no stored result of it
    (one with a stored result may be re-judged from its kept record, with no job)."""
    return any(sub.path is not None and (record is UNREAD or not record or record.get("sha256") != digest)
               for sub, digest, record in zip(submissions, digests, records, strict=True))


def _previous(course: Course, sub: Submission, record) -> dict | None:
    """The notebook's stored record: as read at the start of the round (a process forked then holds it), else read
    now."""
    return results_store.load(results_store.path(course, *sub.key)) if record is UNREAD else record


def _unchanged(previous: dict | None, digest: str | None, fingerprint: str) -> NotebookResult | None:
    """The stored result (`previous`, results_store.load's) of this very file graded by this very grader, or None."""
    if previous and digest and previous.get("sha256") == digest and previous.get("fingerprint") == fingerprint:
        try:
            return results_store.result_from_json(previous["result"])
        except (KeyError, TypeError, ValueError):
            return None
    return None


def class_files_stamp(course: Course, submissions, digests, fingerprints, refused) -> str | None:
    """What the class files (grades, LMS exports, report, dashboard) are made from: the submissions and their
    stored results, the files beside the gradebook (roster, settings, the SQLite gradebook itself, where manual
    grades live), the files written, and the grader's code. None: a gradebook elsewhere (a server), whose
    changes no file shows, so the class files are always written."""
    if not course.gradebook_in_course:
        return None
    stored = course.autograded.glob(f"*/*/*{results_store.SUFFIX}")
    beside = [p for p in course.path("autograder").iterdir() if p.is_file()]
    written = [p for p in course.reports.rglob("*") if p.is_file()] if course.reports.is_dir() else []
    return stamps.digest([(s.key, d) for s, d in zip(submissions, digests, strict=True)], fingerprints, sorted(refused),
                         stamps.file_states([*stored, *beside, *written, course.grades_csv]),
                         stamps.file_states(PACKAGE.rglob(PACKAGE_FILES)))


def _grade_submissions(course, gb, planned, fingerprints, page, code: RunCode, ahead: Ahead[Rejudged] | None, *,
                       jobs, isolate, scheduler, limits, quiet, force=False):
    """Tasks are prepared as job slots free up and each execution is judged, stored (records.graded, its feedback
    page by `page`) and dropped as it finishes: the grader holds a few notebooks at a time, whatever the size of the
    class. A notebook whose last run still holds (records/kept_records.py: the same cells, probes, inputs and limits)
    is judged again from what was kept of it, with no sandbox job, unless `force`; make grade says per assignment
    which was done. `gb` is a graded.Batch: the notebooks stored in a row with no sandbox job between them (re-judged)
    share a commit, and it is committed before the run waits for a job (no transaction stays open while one runs)."""
    from posenc_autograder.records import graded, kept_records

    progress = Progress(len(planned), stream=None if quiet else sys.stderr)
    results: list[NotebookResult] = []
    pending: dict[tuple, tuple[Submission, str | None, JobDigests, dict[str, Any] | None, Reprobe | None]] = {}
    how = RegradeNote()

    def stored_rejudged(sub: Submission, digest: str | None, rejudged: Rejudged) -> str | None:
        """A re-judged notebook stored and counted (None); else why it must run after all."""
        done = _store_rejudged(course, gb, sub, digest, rejudged, fingerprints[sub.assignment], page)
        if isinstance(done, str):
            return done
        how.count(sub.assignment, done[1])
        results.append(done[0])
        progress.step(f"{sub.student} ({done[1].way.value})")
        return None

    def tasks():
        for index, (sub, digest, stored, record) in enumerate(planned):
            if stored is not None:
                results.append(stored)                    # unchanged file and grader
                progress.step(f"{sub.student} (unchanged)")
                continue
            front = ahead.take(index) if ahead is not None else None
            if front is not None:                         # re-judged by another process: stored here, in order
                front.previous = _previous(course, sub, record)
                notes = list(sub.notes)
                sub.notes[:] = front.notes
                for phase, seconds in front.costs.items():
                    costs.add(phase, seconds)
                if stored_rejudged(sub, digest, front) is None:
                    continue
                sub.notes[:] = notes                      # as if never tried: done below, as by one process
            try:
                with costs.timed("prepare"):
                    prepared = prepare_run(course, sub, limits, isolate)        # framed below only if it runs
                    if not isinstance(prepared, NotebookResult):
                        digests = code.job_digests(prepared, variants.student_variant(course, sub.student))
            except Exception as exc:  # noqa: BLE001 - the submission's problem, reported as such
                prepared = grader_error(course, sub, exc)
            previous, why = None, ""
            if not isinstance(prepared, NotebookResult):
                previous = _previous(course, sub, record)      # as read at the round's start: both ways use it
                again = FORCED if force else _rejudge(course, sub, digest, prepared, digests, previous, limits)
                if isinstance(again, Reprobe):         # only some tests' probes run: merged with the kept record below
                    pending[prepared.key] = (sub, digest, digests, previous, again)
                    gb.commit()
                    yield reprobe.probing_only(again.task, again.probed, variants.student_variant(course, sub.student))
                    continue
                if isinstance(again, Rejudged):
                    must_run = stored_rejudged(sub, digest, again)
                    if must_run is None:
                        continue
                    again = must_run
                why = again
                try:
                    with costs.timed("prepare"):
                        task = prepared.task()
                except Exception as exc:  # noqa: BLE001 - as preparing: the submission's problem, reported as such
                    prepared = grader_error(course, sub, exc)
            if isinstance(prepared, NotebookResult):
                kept_records.forget(course, sub.key)
                results.append(graded.settle(course, gb, sub, prepared, digest, fingerprints[sub.assignment], page))
                progress.step(sub.student)
                continue
            how.count(sub.assignment, HowRegraded(Way.RUN, why=why))
            pending[task.key] = (sub, digest, digests, previous, None)
            gb.commit()
            yield task
        gb.commit()

    _run_and_store(course, gb, tasks(), pending, results, fingerprints, page, how, progress, jobs=jobs,
                   scheduler=scheduler, limits=limits)
    how.report(quiet)
    results.sort(key=lambda r: (r.student, r.assignment, r.notebook))
    return results


def _run_and_store(course, gb, tasks, pending, results, fingerprints, page, how, progress, *, jobs, scheduler,
                   limits) -> None:
    """Each sandbox job of `tasks` run, judged and stored as it finishes."""
    from posenc_autograder.records import evidence, graded, kept_records

    executions = run_dask(tasks, scheduler) if scheduler else run_local(tasks, jobs)
    for execution in executions:
        sub, digest, digests, previous, plan = pending.pop(execution.key)
        costs.add("sandbox", execution.sandbox_cpu)
        costs.add("supervise", execution.supervise_cpu)
        if plan is not None:
            reprobed = _reprobed(course, gb, sub, digest, digests, previous, plan, execution,
                                 fingerprints[sub.assignment], page, limits)
            if not isinstance(reprobed, str):
                how.count(sub.assignment, reprobed[1])
                results.append(reprobed[0])
                progress.step(f"{sub.student} (re-probed)")
                gb.commit()
                continue
            how.count(sub.assignment, HowRegraded(Way.RUN, why=reprobed))
            execution = next(run_dask([plan.task], scheduler)) if scheduler else execute_task(plan.task)
            costs.add("sandbox", execution.sandbox_cpu)    # the whole notebook after all (rare): here, in this thread
            costs.add("supervise", execution.supervise_cpu)
        with costs.timed("judge"):
            outcomes = _outcomes(course, sub, execution)
            judged = _judged(course, sub, execution, limits, outcomes)
        with costs.timed("evidence"):           # the judge's verdicts, taken before storing may keep earlier scores
            evidence.keep_graded(course, sub, execution, judged=judged)
        with costs.timed("store"):
            data = kept_records.encoded(digests, execution, outcomes, graded_checks(course, sub)) \
                if outcomes is not None and judged.graded else None          # a failed run is not kept
            kept = kept_records.write(course, sub.key, data)
            results.append(graded.settle(course, gb, sub, judged, digest, fingerprints[sub.assignment], page,
                                         execution.executed_notebook, kept=kept, previous=previous))
            gb.commit()                 # before waiting for the next job
        progress.step(sub.student)
        del execution                   # its observations and notebook go before the next one arrives


NOT_GRADED_BEFORE, NEW_FILE, FORCED = "not graded before", "a new file", "--force"
FIRST_RUNS = (NOT_GRADED_BEFORE, NEW_FILE)        # not a regrade: the note leaves them out
MAX_AUTOGRADED_BYTES = 64 * 2**20                # the autograded notebook a re-judge writes again with its new outcomes


@dataclasses.dataclass
class Rejudged:
    """A notebook judged again from what was kept of its last run, not stored yet (_store_rejudged stores it)."""
    result: NotebookResult
    how: HowRegraded
    autograded: Any                   # the notebook the autograded notebook is written from (kept_records.with_outputs)
    kept: str | None                  # the sha256 of its kept record, when it stands as it is
    rewrite: bytes | None = None      # its kept record written again (its answers judged again; None: none kept)
    rewritten: bool = False
    previous: dict | None = None      # its stored record, as read for the re-judge
    notes: list = dataclasses.field(default_factory=list)      # the submission's notes after prepare (assembly's)
    costs: dict[str, float] = dataclasses.field(default_factory=dict)   # CPU seconds per phase, in another process
    made: graded.MadeAhead | None = None      # what storing it writes, made by that process (graded.made_ahead)


def _rejudge(course, sub: Submission, digest: str | None, task: Prepared, digests: JobDigests,
             previous: dict | None, limits) -> Rejudged | Reprobe | str:
    """The notebook judged again from what was kept of its last run, with no sandbox job (stored by _store_rejudged);
    else why it must run again. Its answers are judged again only where its judge changed; then, the integrity
    evidence being made from the whole run, a notebook whose verdicts moved runs again (one whose verdicts stand keeps
    its evidence as it was: the pass or fail it records of the answers on the shared inputs is the last run's
    judge's). A Reprobe when some tests' probes must run again (their inputs changed, or their judge did with no
    answers kept). Stores nothing: another process may compute it (_rejudging_ahead)."""
    from posenc_autograder.records import evidence, kept_records

    if previous is None:
        return NOT_GRADED_BEFORE
    if digest is None or previous.get("sha256") != digest:
        return NEW_FILE
    try:
        recalled = kept_records.recall(course, sub.key, task, digests, previous.get("kept"))
        last = _autograded_text(course, sub)
        probed = recalled.to_probe(graded_checks(course, sub))
        if probed:
            return Reprobe(task.task(), recalled, probed, last)      # framed whole: run whole if it must
        autograded = kept_records.with_outputs(task, last)
        with costs.timed("judge"):
            outcomes = judged_tests(course, sub, recalled.execution, recalled.outcome)
            result = judge(course, sub, recalled.execution, limits, outcomes)
        rejudged = Rejudged(result, HowRegraded(Way.REWEIGHED), autograded, recalled.sha256, previous=previous)
        if recalled.rejudged:
            before = {t["cell_id"]: bool(t["problems"]) for t in previous["result"]["tests"] if t["hidden"]}
            if before != evidence.failed_tests(result):
                raise kept_records.MustRun("its verdicts moved, and its integrity evidence is made from the whole run")
            rejudged.how = HowRegraded(Way.REJUDGED, tuple(recalled.rejudged))
            rejudged.rewrite = kept_records.encoded(digests, recalled.execution, outcomes, graded_checks(course, sub))
            rejudged.rewritten = True
    except kept_records.MustRun as why:
        return str(why)
    except Exception as exc:  # noqa: BLE001 - what was kept could not be judged again: the notebook runs instead
        return f"its kept record could not be judged again ({type(exc).__name__})"
    return rejudged


def _store_rejudged(course, gb, sub: Submission, digest: str | None, rejudged: Rejudged, fingerprint: str,
                    page) -> tuple[NotebookResult, HowRegraded] | str:
    """A re-judged notebook stored (its kept record first, when written again); else why it must run again."""
    from posenc_autograder.records import graded, kept_records

    try:
        kept = kept_records.write(course, sub.key, rejudged.rewrite) if rejudged.rewritten else rejudged.kept
    except Exception as exc:  # noqa: BLE001 - as judging again: the notebook runs instead
        return f"its kept record could not be judged again ({type(exc).__name__})"
    with costs.timed("store"):
        return graded.settle(course, gb, sub, rejudged.result, digest, fingerprint, page, rejudged.autograded,
                             kept=kept, previous=rejudged.previous, how=rejudged.how, made=rejudged.made), rejudged.how


@dataclasses.dataclass(frozen=True)
class RunCode:
    """The digests of the grading code a run's job digests take, worked out once a run: the code is what it is for the
    whole run (each stats the files it covers, milliseconds a notebook)."""
    judge: str
    inputs: str
    run: str

    def job_digests(self, prepared: Prepared, variant: int | None) -> JobDigests:
        return regrade.job_digests(prepared, variant, self.judge, inputs=self.inputs, run_code=self.run)


AHEAD_FROM = 24              # notebooks to grade from which re-judging is spread over processes (a fork costs ~10 ms)


def _rejudging_ahead(course, planned, limits, isolate, code: RunCode, jobs, fingerprints,
                     page) -> Ahead[Rejudged] | None:
    """Processes (one per job slot) that re-judge the notebooks to grade ahead of the run, without storing, and make
    what storing one writes of it (graded.made_ahead); None when there are too few notebooks or one core. A notebook
    they cannot re-judge is done by the run, as with no process."""
    from posenc_autograder.orchestration.ahead import Ahead
    from posenc_autograder.records import graded

    todo = [index for index, (_, _, stored, _) in enumerate(planned) if stored is None]
    if jobs < 2 or len(todo) < AHEAD_FROM:
        return None

    def rejudged(index: int) -> Rejudged | None:
        sub, digest, _, record = planned[index]
        previous = _previous(course, sub, record)
        if previous is None or digest is None or previous.get("sha256") != digest:
            return None                               # a first grading: prepared by the run, which runs it
        costs.reset()                                 # this process's own: what it spent goes back with the answer
        with costs.timed("prepare"):
            prepared = prepare_run(course, sub, limits, isolate)
            if isinstance(prepared, NotebookResult):
                return None
            digests = code.job_digests(prepared, variants.student_variant(course, sub.student))
        found = _rejudge(course, sub, digest, prepared, digests, previous, limits)
        if not isinstance(found, Rejudged):
            return None
        with costs.timed("store"):
            try:
                found.made = graded.made_ahead(course, sub, found.result, digest, fingerprints[sub.assignment],
                                               previous, page, found.autograded, found.how)
                found.autograded = None           # the run reads it from what was made, if it needs it
            except Exception:  # noqa: BLE001 - the run makes them as it stores
                found.made = None
        found.notes, found.costs = list(sub.notes), costs.taken()
        found.previous = None                         # the run holds it (planned): not sent back
        return found

    warm.wait_for_start()                             # forked with no thread in the middle of its work
    return Ahead(rejudged, todo, jobs)


@dataclasses.dataclass
class Reprobe:
    """A notebook whose kept record stands but for some hidden tests: its job runs only their probes
    (reprobe.probing_only), and the result is what a full run gives, merged with what was kept (_reprobed)."""
    task: GradingTask            # prepare's, every probe in place: what the merged run stands for (run if it must)
    recalled: Recalled
    probed: list[str]
    autograded: str              # the autograded notebook of the last run: the outputs of the probe cells not run


def _reprobed(course, gb, sub: Submission, digest: str | None, digests: JobDigests, previous: dict | None,
              plan: Reprobe, execution: Execution, fingerprint: str, page,
              limits) -> tuple[NotebookResult, HowRegraded] | str:
    """The notebook judged on the new answers of the tests probed again and the kept outcomes (or answers) of the
    others, its evidence and kept record updated for those tests, and stored; else why the whole notebook must run:
    the job failed, a test not probed again changed its verdict (its integrity evidence is made from the whole run),
    or the last evidence cannot be read."""
    from posenc_autograder.records import evidence, graded, kept_records

    assert previous is not None                      # a Reprobe is planned from the stored record
    try:
        merged = plan.recalled.merged(execution, plan.probed, plan.task, plan.autograded)
        again: set[str] = set()                  # the tests judged on answers: new ones, or kept ones judged again
        with costs.timed("judge"):
            outcomes = judged_tests(course, sub, merged, plan.recalled.outcome_unless(plan.probed, again))
            result = judge(course, sub, merged, limits, outcomes)
        before = {t["cell_id"]: bool(t["problems"]) for t in previous["result"]["tests"]
                  if t["hidden"] and t["cell_id"] not in again}
        after = {cell_id: failed for cell_id, failed in (evidence.failed_tests(result) or {}).items()
                 if cell_id not in again}
        if before != after:          # a kept outcome stands for its last verdict: never expected
            raise kept_records.MustRun("the verdict of a test judged from its kept outcome moved")
        with costs.timed("evidence"):
            evidence.keep_reprobed(course, sub, merged, sorted(again), result)
    except kept_records.MustRun as why:
        return str(why)
    except Exception as exc:  # noqa: BLE001 - the merge could not be made: the notebook runs in full instead
        return f"the run of its changed tests could not be merged with its kept record ({type(exc).__name__})"
    done = HowRegraded(Way.REPROBED, tuple(plan.probed))
    with costs.timed("store"):
        kept = kept_records.write(course, sub.key, kept_records.encoded(digests, merged, outcomes,
                                                                        graded_checks(course, sub)))
        return graded.settle(course, gb, sub, result, digest, fingerprint, page, merged.executed_notebook, kept=kept,
                             previous=previous, how=done), done


def _autograded_text(course: Course, sub: Submission) -> str:
    """The autograded notebook stored last time (MustRun when it cannot be read back): its cells' plain outputs are
    the run's (nbgrader_files keeps only text), and the new outcomes replace its hidden tests' diagnoses as they would
    a new run's."""
    from posenc_autograder.records import kept_records

    target = course.autograded / sub.student / sub.assignment / f"{sub.notebook}.ipynb"
    try:
        with open(target, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NOFOLLOW)) as handle:
            data = handle.read(MAX_AUTOGRADED_BYTES + 1)
        if len(data) > MAX_AUTOGRADED_BYTES:
            raise kept_records.MustRun("its autograded notebook is too large to read again")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        raise kept_records.MustRun("its autograded notebook is missing") from None


class RegradeNote:
    """What make grade says per assignment of the notebooks it regraded: how many were re-judged from their kept
    records with no sandbox job (re-weighed: only points changed; their answers judged again: a judge changed), how
    many had only some hidden tests' probes run again (naming the tests), and how many were executed again, and why
    (a new file, --force, the cells, probes or limits, nothing kept). Counted from each notebook's HowRegraded."""

    def __init__(self):
        self.done: dict[str, list[HowRegraded]] = {}

    def count(self, assignment: str, how: HowRegraded) -> None:
        self.done.setdefault(assignment, []).append(how)

    def lines(self) -> list[str]:
        said = []
        for assignment, done in sorted(self.done.items()):
            ways = {way: [h for h in done if h.way is way] for way in Way}
            kept = ways[Way.REWEIGHED] + ways[Way.REJUDGED]
            probed = ways[Way.REPROBED]
            ran = _counted(h.why for h in ways[Way.RUN] if h.why not in FIRST_RUNS or kept or probed)
            if not kept and not probed and not ran:
                continue                                  # a first grading, not a regrade
            parts = [f"{words.count(len(kept), 'notebook')} re-judged from their kept records (not executed again"
                     + (f": {len(ways[Way.REWEIGHED])} re-weighed, {len(ways[Way.REJUDGED])} with their answers "
                        f"judged again)" if kept else ")")]
            if probed:
                tests = ", ".join(f"{test} ({n})" for test, n in _counted(t for h in probed for t in h.tests))
                parts.append(f"{len(probed)} re-probed (executed with only these tests' probes: {tests})")
            executed = "; ".join(f"{n} ({why})" for why, n in ran)
            parts.append(f"{sum(n for _, n in ran)} executed again: {executed}" if ran else "none executed again")
            said.append(f"Regrade of {assignment}: " + ", ".join(parts))
        return said

    def report(self, quiet: bool) -> None:
        if not quiet:
            for line in self.lines():
                print(line, file=sys.stderr)


def _counted(items) -> list[tuple[Any, int]]:
    """Each distinct item with how many times it came, the most frequent first."""
    counts: dict[Any, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])


def _outcomes(course, sub, execution) -> dict | None:
    """Each hidden test's outcome on the run (what is kept for a regrade); None when the judge failed (_judged
    reports it)."""
    try:
        return judged_tests(course, sub, execution)
    except Exception:  # noqa: BLE001 - _judged judges again and stores the grader's error
        return None


def _judged(course, sub, execution, limits, outcomes: dict | None = None) -> NotebookResult:
    """The judge's result (on `outcomes`, each hidden test's, when given), or the grader's error on this notebook when
    the judge itself failed (stored as any result is: one notebook never stops the others)."""
    try:
        return judge(course, sub, execution, limits, outcomes)
    except Exception as exc:  # noqa: BLE001 - one notebook never stops the others
        return grader_error(course, sub, exc)


def arguments(parser) -> None:
    parser.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    parser.add_argument("--student", action="append", help="grade only this student (repeatable)")
    parser.add_argument("--force", action="store_true", help="regrade unchanged submissions too")
    parser.add_argument("--no-sandbox", action="store_true", help="run student code without isolation (unsafe)")


def run_command(args) -> int:
    course = course_for_command(args.course, args.db_url)
    if not args.no_sandbox:
        try:
            check_sandbox()
        except SandboxUnavailable as exc:
            print(f"Cannot grade safely: {exc}", file=sys.stderr)
            return 2
        if not process_limit_enforced():
            print("Warning: no writable cgroup pids controller here, so the number of processes a "
                  "submission starts is not capped; a fork bomb is stopped only at the notebook time limit. "
                  "Grade as root on a host with cgroups (v1 or v2) to cap it.", file=sys.stderr)
    from posenc_autograder.reports import roster_check
    unknown = roster_check.unknown_students(course, args.student)
    for finding in unknown:
        print(f"error: {finding.text(course)}", file=sys.stderr)
    if unknown:
        return 1
    warn_if_unreleased(course, args.assignment)
    class_made: list[results_store.ClassResults] = []
    results = grade_all(course, jobs=args.jobs or default_jobs(), isolate=not args.no_sandbox, force=args.force,
                        assignments=args.assignment, students=args.student, scheduler=args.scheduler,
                        class_made=class_made)
    if results:
        database.remember_holding(course)     # the grades just stored: the next command need not read it to know
    else:
        asked = " for the students or assignments asked" if args.student or args.assignment else ""
        print(f"nothing submitted{asked}: run make collect first (ZIP=<the LMS download>)", file=sys.stderr)
        return 1
    from posenc_autograder.reports import feedback
    from posenc_autograder.reports import run_report as report

    print(report.summary(course, results))
    print(f"Student code ran in: {'no sandbox (--no-sandbox)' if args.no_sandbox else warm.status()}")
    stored = class_made[0].results if class_made else results_store.stored_results(course)     # each record read once
    print_findings(course, roster_check.class_findings(course, stored))
    for r in results:
        if not r.graded:
            print(f"Not graded: {r.student}, {r.assignment}/{r.notebook}.ipynb: {feedback.not_graded_reason(r)}",
                  file=sys.stderr)
    from posenc_autograder.results import NoteKind
    return 1 if any(r.notes_of(NoteKind.GRADER_ERROR) for r in results if not r.graded) else 0


def print_findings(course: Course, findings) -> None:
    """What the grade files leave out, with the fix (the roster, lms.toml)."""
    if findings:
        print("\nLeft out of the LMS files until fixed (then make feedback writes them again):", file=sys.stderr)
        print("\n".join(f"  - {finding.text(course)}" for finding in findings), file=sys.stderr)


def warn_if_unreleased(course: Course, assignments: list[str] | None) -> None:
    """Grading against solutions/ that exercises/ does not reflect: students hold another notebook."""
    stale = stale_notebooks(course, assignments)
    if stale:
        print(f"Warning: exercises/ is not what solutions/ releases now ({', '.join(stale)}); students have "
              f"an older notebook than the one graded against. Run make release (and hand out the new "
              f"notebook) unless that is intended.", file=sys.stderr)


def stale_notebooks(course: Course, assignments: list[str] | None) -> list[str]:
    """freshness.stale_notebooks, worked out again only when a notebook or the nbgrader settings changed."""
    inputs = [course.path(CONFIG)]
    for folder in (SOURCE_DIRECTORY, RELEASE_DIRECTORY):
        inputs += sorted(course.path(folder).glob("*/*.ipynb"))
    stamp = stamps.digest(sorted(assignments or []), stamps.file_contents(inputs),
                          stamps.file_contents([PACKAGE / "authoring" / "freshness.py"]))
    known = stamps.recall(course, RELEASE_CHECK, stamp)
    if isinstance(known, list):
        return known
    from posenc_autograder.authoring import freshness

    stale = freshness.stale_notebooks(course, assignments)
    stamps.remember(course, RELEASE_CHECK, stamp, stale)
    return stale


RELEASE_CHECK = "release-check"
