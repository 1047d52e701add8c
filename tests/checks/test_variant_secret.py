"""The course's variant secret is created once, whole, even when several graders start at the same moment."""
import os
import threading

import pytest

from posenc_autograder.checks import variants


class _Course:
    def __init__(self, root):
        self.root = root

    def path(self, relative):
        return self.root / relative


@pytest.mark.parametrize("round_", range(5))
def test_graders_starting_at_once_share_one_whole_secret(tmp_path, monkeypatch, round_):
    monkeypatch.delenv(variants.SECRET_ENV, raising=False)
    course, start = _Course(tmp_path), threading.Barrier(8)
    secrets_read, errors = [], []

    def grader():
        start.wait()
        try:
            secrets_read.append(variants.course_secret(course))
        except Exception as error:            # noqa: BLE001 - the test reports what a grader would have died of
            errors.append(error)

    threads = [threading.Thread(target=grader) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(secrets_read)) == 1 and len(secrets_read[0]) == 64
    assert sorted(os.listdir(tmp_path / "autograder")) == ["variant_secret"]      # no partial left behind
    assert oct((tmp_path / variants.SECRET_FILE).stat().st_mode & 0o777) == "0o600"
