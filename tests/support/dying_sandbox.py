"""Stand-in sandboxes for the portal's grading processes that import nothing the grading side does not (its fork
server preloads that): a grading process unpickles its execute function, and one defined in a test module imported that
module, pytest and the web side with it, ~1.2 CPU-s a process; a test whose processes die and are replaced paid it at
each start, past its wait on a loaded machine (tests/portal/test_grading_processes.py)."""
import gc
import os

from posenc_autograder.grading.execute import Execution


def graded_elsewhere_or_dies(task):
    """A stand-in sandbox the grading process imports: a notebook marked "dies" ends the whole grading process
    mid-job; any other is graded (no answers), and its executed copy says which process ran it."""
    if "# dies" in task.notebook_json:
        os._exit(3)
    return Execution(task.key, {}, [], {}, 0.01, executed_notebook=task.notebook_json.replace(
        "# honest", f"# honest, graded in {os.getpid()}"))


def graded_saying_what_is_frozen(task):
    """A stand-in sandbox whose executed copy says how many objects its grading process keeps out of the collector."""
    return Execution(task.key, {}, [], {}, 0.01, executed_notebook=task.notebook_json.replace(
        "# honest", f"# honest, frozen {gc.get_freeze_count()}"))


class DiesRightAfterItsFirstClaim:
    """A stand-in sandbox (graded_elsewhere_or_dies) which, unpickled in a grading process, ends that process the
    moment the first claim of the test is committed, before it has said a word of it to the web process."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __call__(self, task):
        return graded_elsewhere_or_dies(task)

    def __setstate__(self, state):                   # only in a grading process: the web process holds the original
        self.__dict__.update(state)
        from posenc_autograder.portal import queue
        claim = queue.claim_attempt                 # the worker's claim (queue.claim: its id)

        def claim_then_die(*args, **kwargs):
            job = claim(*args, **kwargs)
            if job is not None and not os.path.exists(self.marker):
                open(self.marker, "x").close()
                os._exit(9)                          # committed as running, nothing sent
            return job
        queue.claim_attempt = claim_then_die
