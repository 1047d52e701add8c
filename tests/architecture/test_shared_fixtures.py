"""The fixtures the test workers share through the checkout are made by one of them: the others wait and read it."""
import shutil
import threading
import time

import fixture_submissions

from posenc_autograder.authoring import generation
from posenc_autograder.course import GRADEBOOK


def test_workers_asking_at_once_for_the_registered_gradebook_register_each_assignment_once(tmp_path, monkeypatch):
    monkeypatch.setattr(fixture_submissions, "KEPT_GRADEBOOKS", tmp_path / "kept")
    registered = []

    def register(course, assignment):          # nbgrader's seconds, as a pause long enough for both to ask
        registered.append(assignment)
        time.sleep(0.2)
        (course.work / generation.KEPT).mkdir(parents=True, exist_ok=True)
        (course.root / GRADEBOOK).write_bytes(b"")

    monkeypatch.setattr(fixture_submissions.gradebook, "register", register)
    found = []
    workers = [threading.Thread(target=lambda: found.append(fixture_submissions.registered_gradebook.__wrapped__()))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assignments = sorted(p.name for p in (fixture_submissions.ROOT / "exercises").iterdir() if p.is_dir())
    assert sorted(registered) == assignments and len(set(found)) == 1 and found[0].is_file()


def test_a_new_checkouts_registered_gradebook_recalls_the_generated_assignments_kept_in_the_users_cache(
        tmp_path, monkeypatch):
    kept = fixture_submissions.registered_gradebook()            # this checkout's, its generated entries beside it
    seed = tmp_path / "seed"
    shutil.copytree(kept.parent / generation.KEPT, seed)
    monkeypatch.setattr(fixture_submissions, "KEPT_GRADEBOOKS", tmp_path / "kept")      # a checkout with none kept
    monkeypatch.setattr(fixture_submissions, "GENERATED_SEED", seed)

    def generate(*args, **kwargs):
        raise AssertionError("generated again although kept")

    monkeypatch.setattr(generation, "_generate", generate)
    made = fixture_submissions.registered_gradebook.__wrapped__()
    assert made.is_relative_to(tmp_path / "kept") and made.read_bytes()[:16] == b"SQLite format 3\0"


def test_a_hidden_tests_change_is_a_new_registered_gradebook(tmp_path, monkeypatch):
    """A hidden test's points live in the gradebook but in no released notebook: a checkout's kept gradebook made
    before such a change must not be read after it (it was: its key read only the released notebooks)."""
    package = tmp_path / "package"
    shutil.copytree(generation.PACKAGE / "checks" / fixture_submissions.ASSIGNMENT,
                    package / "checks" / fixture_submissions.ASSIGNMENT)
    monkeypatch.setattr(generation, "PACKAGE", package)
    before = fixture_submissions._registration_key()
    hidden = next(path for path in sorted((package / "checks").rglob("*.py")) if path.stat().st_size)
    hidden.write_text(hidden.read_text() + "\n# points 4 -> 5\n")
    assert fixture_submissions._registration_key() != before
