"""The README's numbers for the course's settings are the settings': its table of settings is rewritten from them
by `make release` (as the totals are from the HiddenTest objects), and the numbers its prose repeats match them."""
import dataclasses
import re

from notebook_tools import ROOT

from posenc_autograder import settings
from posenc_autograder.authoring import release
from posenc_autograder.course import Course

README = (ROOT / "README.md").read_text()


def course_settings() -> settings.Settings:
    return settings.load(Course(ROOT))


def test_the_table_lists_every_setting_once_and_nothing_else():
    rows = [(m["section"], m["key"]) for m in release.SETTING_ROW.finditer(README)]
    every = [(name, f.name) for name, kind in settings.SECTIONS.items() for f in dataclasses.fields(kind)]
    assert sorted(rows) == sorted(every)


def test_the_table_holds_the_courses_values():
    assert release.readme_with_settings(README, course_settings()) == README


def test_a_changed_setting_rewrites_its_row_and_only_it():
    changed = dataclasses.replace(course_settings(), sandbox=settings.Limits(memory_bytes=2 * 2**30),
                                  portal=settings.PortalDefaults(max_queued=3))
    new = release.readme_with_settings(README, changed)
    gone = set(README.splitlines()) - set(new.splitlines())
    assert {line.split(" | ")[0] for line in gone} == {"| `[sandbox] memory_bytes`", "| `[portal] max_queued`"}
    assert '| `[sandbox] memory_bytes` | "2 GiB" |' in new and '| `[portal] max_queued` | 3 |' in new


def test_the_numbers_the_prose_repeats_are_the_settings():
    limits, caps = course_settings().sandbox, course_settings().caps
    size = settings.size
    for phrase in (f"rlimits ({size(limits.memory_bytes)} address space",
                   f"a pids cgroup ({limits.max_processes})",
                   f"`/tmp` ({size(limits.tmp_bytes)})",
                   f"`/dev/shm` ({size(limits.shm_bytes)})",
                   f"capped separately, {size(limits.memory_bytes)} of address space",
                   f"({size(caps.notebook_bytes)} a notebook",
                   f"the portal's own cap is {size(caps.notebook_bytes)} a notebook"):
        assert phrase in re.sub(r"\s+", " ", README), phrase
