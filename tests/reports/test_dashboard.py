"""autograder/reports/class.html: self-contained, every figure described, student text inert, and it opens
cleanly in Chromium (the browser fixture comes from conftest, the page loader from support/book_pages)."""
import dataclasses
import datetime as dt
import html.parser
import pathlib
import re
from xml.etree import ElementTree

import markupsafe
import numpy as np
import pytest
from book_pages import open_page
from fixture_submissions import make_course

from posenc_autograder import csvsafe
from posenc_autograder.checks import REGISTRY
from posenc_autograder.course import Course
from posenc_autograder.intake import roster
from posenc_autograder.records import results_store
from posenc_autograder.reports import dashboard, late_policy
from posenc_autograder.reports import run_report as report
from posenc_autograder.results import Asked, GradedTest, Note, NotebookResult, NoteKind, Problem, ProblemKind

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
SWAPPED = "sin and cos are swapped: even columns should hold sin, odd columns cos"
STUB = "raised NotImplementedError: the function is still the template stub"


def swapped(row: int, judged_with_cause: bool):
    """The judge's words for the swap, as a Problem with its cause or (older judges) in the text alone."""
    text = (f"sinusoidal_positional_encoding(3, 4) is wrong at [{row}, 0]: expected 0.9, got -0.4. "
            f"Likely cause: {SWAPPED}.")
    return Problem(text, SWAPPED) if judged_with_cause else Problem(text)


def result(student, passed, notes=(), graded=True, seconds=1.5, problems=None):
    """A result with two hidden tests; `passed` says which of them pass."""
    first, second = problems or ([swapped(len(student), student == "bob")], [f"raised ValueError: {HOSTILE}"])
    tests = [GradedTest("hidden_pe_values", "values", True, 3.0 if passed[0] else 0.0, 3.0, [] if passed[0] else first),
             GradedTest("hidden_dot_product", "dot", True, 2.0 if passed[1] else 0.0, 2.0, [] if passed[1] else second)]
    return NotebookResult(student, "positional_encoding", "positional_encoding", graded, tests, list(notes),
                          seconds=seconds)


@pytest.fixture
def class_page(tmp_path):
    """Three students with the same mistake (bob's judge gave its cause as data), a timeout, an unreadable
    notebook, an untouched template, two byte-identical files, and a manual grade for bob."""
    course = Course(make_course(tmp_path / "course"))
    results = [result("ann", (True, True)), result("bob", (False, True)), result("cy", (False, False)),
               result("dee", (False, False), [Note(NoteKind.TIMEOUT, "cell 'hidden_dot_product' ran longer than "
                                                                     "30 s and was stopped")]),
               result("eve", (False, False), [Note(NoteKind.UNREADABLE, "the notebook could not be read: " + HOSTILE)],
                      graded=False),
               result("fay", (False, False), problems=([STUB], [STUB, "... and 1 more case like these"]))]
    results[-1].untouched = True                           # fay's answers are the template's, as grading found
    files = {(r.student, r.assignment, r.notebook): results_store.GradedFile(digest)      # cy's and dee's: one file
             for r, digest in zip(results, ["a" * 64, "b" * 64, "c" * 64, "c" * 64, None, "f" * 64], strict=True)}
    roster.save(course, {("bob", "positional_encoding"): {
        "student_id": "bob", "assignment": "positional_encoding", "lms": "canvas", "lms_user_id": "7",
        "name": HOSTILE, "submitted_at": "2026-11-20T10:00:00", "late": "yes"}})
    finals = {(r.student, r.assignment): (r.score, r.max_score) for r in results}
    finals["bob", "positional_encoding"] = (4.0, 5.0)                  # set by hand in formgrader
    path = dashboard.write(course, results, refused=[f"{HOSTILE}: the folder is a symbolic link"], finals=finals,
                           files=files)
    return course, results, path


class Parsed(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.images, self.charts, self.links, self.text = [], [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.images.append(attrs)
        if tag == "svg":
            self.charts.append(attrs)
        if tag == "a":
            self.links.append(attrs.get("href", ""))
        for name, value in attrs.items():
            assert not name.startswith("on"), f"event handler attribute {name}={value!r}"

    def handle_data(self, data):
        self.text.append(data)


def parse(path):
    parsed = Parsed()
    parsed.feed(path.read_text())
    return parsed


def test_page_is_self_contained_and_every_figure_has_alt_text(class_page):
    course, results, path = class_page
    page = parse(path)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert len(page.charts) == 3
    for chart in page.charts:
        assert chart["role"] == "img" and len(chart.get("aria-label", "")) > 30
    assert "http://" not in path.read_text().replace("http://www.w3.org", "") and "https://" not in path.read_text()


def test_alt_text_states_the_figures_numbers(class_page):
    _, results, path = class_page
    alts = [chart["aria-label"] for chart in parse(path).charts]
    # 5 graded notebooks: 0 %, 0 %, 0 %, 40 % (2 of 5 points), 100 %  -> bins 0-10: 3, 40-50: 1, 90-100: 1
    assert "3, 0, 0, 0, 1, 0, 0, 0, 0, 1" in alts[0]
    assert "hidden_pe_values 20 %" in alts[1] and "hidden_dot_product 40 %" in alts[1]
    assert "median 1.5 s" in alts[2] and "over 5 notebooks" in alts[2]


def test_student_text_is_escaped(class_page):
    _, _, path = class_page
    text = path.read_text()
    assert HOSTILE not in text and "&lt;script&gt;" in text
    assert "alert" in "".join(parse(path).text)       # shown as text, not run


def section(text, title, following):
    return text.split(f">{title}<")[1].split(f">{following}<")[0]


def test_one_row_per_cause_naming_every_student_who_made_it(class_page):
    _, _, path = class_page
    mistakes = section(path.read_text(), "Mistakes across the class", "Parts not attempted")
    rows = [row for row in mistakes.split("<tr>") if SWAPPED in row]
    assert len(rows) == 1 and row_students(rows[0]) == ["bob", "cy", "dee"]
    assert 'data-label="Students">3</td>' in rows[0]
    assert "hidden_pe_values (9)" in rows[0]          # three students, 3 points each
    assert "more case" not in mistakes and "template stub" not in mistakes


def row_students(row):
    return [link.split(">")[1].split("<")[0] for link in row.split("<a ")[1:]]


def test_stubs_collapse_into_one_row_per_part(class_page):
    _, _, path = class_page
    stubs = section(path.read_text(), "Parts not attempted", "Students who need attention")
    rows = stubs.split("<tr>")[2:]
    parts = {REGISTRY["hidden_pe_values"].answer_cell, REGISTRY["hidden_dot_product"].answer_cell}
    assert len(rows) == len(parts) and all(row_students(row) == ["fay"] for row in rows)


def test_final_scores_with_the_automatic_beside_them(class_page):
    _, _, path = class_page
    bob = path.read_text().split("Every student")[1].split('data-label="Student">bob</td>')[1].split("</tr>")[0]
    assert "4 / 5" in bob and "automatic 2" in bob
    ann = path.read_text().split("Every student")[1].split('data-label="Student">ann</td>')[1].split("</tr>")[0]
    assert "5 / 5" in ann and "automatic" not in ann


def test_a_late_deduction_is_not_shown_as_a_manual_grade(tmp_path):
    course = Course(make_course(tmp_path / "course"))
    results = [result("ann", (True, True)), result("bob", (False, True))]            # automatic 5 and 2 of 5
    before = {("ann", "positional_encoding"): (5.0, 5.0), ("bob", "positional_encoding"): (4.0, 5.0)}   # bob by hand
    late = late_policy.Lateness(20, dt.datetime(2026, 11, 21, tzinfo=dt.timezone.utc),
                                dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc), False)
    lateness = {key: late for key in before}
    page = dashboard.render(course, results, finals=late_policy.apply(before, lateness), lateness=lateness,
                            before_late=before)
    row = lambda who: page.split("Every student")[1].split(f'data-label="Student">{who}</td>')[1].split("</tr>")[0]   # noqa: E731
    assert "4 / 5" in row("ann") and "(5 before the late deduction)" in row("ann") and "automatic" not in row("ann")
    assert "3.2 / 5" in row("bob") and "(automatic 2; 4 before the late deduction)" in row("bob")


def test_a_submission_time_is_given_in_the_courses_zone_named(tmp_path):
    """A New York course whose deadline is 2026-11-20 23:59 there: a notebook handed in at 20:00 New York time read
    '2026-11-21T01:00:00+00:00' on the dashboard, a day after the deadline's date, while the student's pages say
    '2026-11-20 20:00 America/New_York'. grades.csv keeps the stamp with its offset, for programs."""
    course = Course(make_course(tmp_path / "course"))
    (course.root / "autograder" / "course.toml").write_text('[course]\ntime_zone = "America/New_York"\n')
    roster.save(course, {("ann", "positional_encoding"): {
        "student_id": "ann", "assignment": "positional_encoding", "lms": "canvas", "lms_user_id": "7", "name": "Ann",
        "submitted_at": "2026-11-21T01:00:00+00:00", "late": "no"}})
    page = dashboard.render(course, [result("ann", (True, True))])
    row = page.split("Every student")[1].split('data-label="Student">ann</td>')[1].split("</tr>")[0]
    assert "2026-11-20 20:00 America/New_York" in row and "+00:00" not in row
    assert late_policy.Deadlines(course).submitted_stamp("ann", "positional_encoding") == "2026-11-21T01:00:00+00:00"


def test_students_needing_attention_and_feedback_links(class_page):
    course, results, path = class_page
    text = path.read_text()
    attention = section(text, "Students who need attention", "Every student")
    why = {row_students(row)[0]: row for row in attention.split("<tr>")[2:] if "<a " in row}
    assert "timeout" in why["dee"] and "not graded" in why["eve"]
    assert "untouched" in why["fay"] and "byte-identical to dee" in why["cy"] and "byte-identical to cy" in why["dee"]
    assert set(why) == {"cy", "dee", "eve", "fay"}
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;: the folder is a " \
           "symbolic link" in attention and "5 need attention" in text
    for link in parse(path).links:
        assert (path.parent / link).resolve().parent.parent.parent == course.feedback.resolve()
    assert "late" in text.split("Every student")[1].split("bob")[1].split("</tr>")[0]


def test_the_students_needing_attention_are_those_a_note_asks_someone_to_act_on(tmp_path):
    """Whether a note puts its student among those needing attention is its kind's `asks`, as in the run report: an
    error in the student's own cell is there, a regrade or kept scores (which only inform) are not. Every kind is
    worded in the "Why" column."""
    course = Course(make_course(tmp_path / "course"))
    results = [result(f"s{i}", (True, True), [Note(kind, f"what happened: {kind.value}")])
               for i, kind in enumerate(NoteKind)]
    page = dashboard.render(course, results)
    attention = section(page, "Students who need attention", "Every student")
    listed = {row_students(row)[0] for row in attention.split("<tr>")[2:] if "<a " in row}
    assert listed == {f"s{i}" for i, kind in enumerate(NoteKind) if kind.asks is not Asked.NOBODY}
    assert f"s{list(NoteKind).index(NoteKind.OWN_CELL_RAISED)}" in listed
    assert not {f"s{list(NoteKind).index(k)}" for k in (NoteKind.REGRADE, NoteKind.SCORES_KEPT)} & listed
    assert set(dashboard.WHY) == set(NoteKind)
    for kind in NoteKind:
        if kind.asks is not Asked.NOBODY:
            assert markupsafe.escape(dashboard.WHY[kind]) in attention


def test_csv_cells_cannot_start_formulas():
    for hostile in ("=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx"):
        assert csvsafe.cell(hostile).startswith("'")
    assert csvsafe.cell(-2.5) == "-2.5" and csvsafe.cell("alice") == "alice"


def test_markdown_report_escapes_student_text():
    text = report.markdown_text("[click](javascript:alert(1)) <b>x</b>\n## fake heading")
    assert "<b>" not in text and "](" not in text and "\n" not in text
    assert text.startswith("\\[click\\]")


def test_dashboard_in_chromium(class_page, browser):  # noqa: F811 - pytest fixture imported above
    course, _, path = class_page
    page, problems = open_page(browser, path.as_uri())
    requests, dialogs = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.reload(wait_until="load")
    assert problems == [] and dialogs == []
    assert all(url.startswith(("file://", "data:")) for url in requests), requests
    sizes = page.evaluate("() => [...document.querySelectorAll('svg[role=img]')].map(svg => "
                          "[svg.getBoundingClientRect().width, svg.getAttribute('aria-label').length])")
    assert len(sizes) == 3 and all(w > 250 and alt > 30 for w, alt in sizes)
    row = page.locator("tr", has_text=SWAPPED)
    assert row.count() == 1 and row.locator("a").all_inner_texts() == ["bob", "cy", "dee"]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")     # nothing runs off the page
    shots = pathlib.Path(__file__).resolve().parents[2] / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "class-dashboard.png"), full_page=True)
    page.set_viewport_size({"width": 375, "height": 800})        # a phone: each row a card of labelled lines
    narrowest = page.evaluate("() => Math.min(...[...document.querySelectorAll('.wide td')]"
                              ".map(td => td.getBoundingClientRect().width))")
    assert narrowest > 250, f"a table cell {narrowest:.0f} px wide on a 375 px screen"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    labels = page.evaluate("() => [...document.querySelectorAll('.wide td')].map(td => td.dataset.label || '')")
    assert all(labels), "a cell with no label to show on a phone"
    problems = chart_text_problems(page)
    assert problems == [], "\n".join(problems)
    page.screenshot(path=str(shots / "class-dashboard-375.png"), full_page=True)
    page.close()


SMALLEST_TEXT_PX = 12         # what a phone's reader can read without zooming


def chart_text_problems(page) -> list[str]:
    """Each chart's words as drawn: too small, outside its chart, or on top of another word of it."""
    drawn = page.evaluate("""() => [...document.querySelectorAll('svg.chart')].map(svg => {
        const box = svg.getBoundingClientRect();
        return [...svg.querySelectorAll('text')].map(t => {
            const r = t.getBoundingClientRect();
            const scale = box.width / svg.viewBox.baseVal.width;
            return {text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale,
                    inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5
                            && r.bottom <= box.bottom + 0.5, box: [r.left, r.top, r.right, r.bottom]};
        });
    })""")
    assert len(drawn) == 3 and all(len(texts) >= 3 for texts in drawn)
    problems = []
    for texts in drawn:
        for i, t in enumerate(texts):
            if t["px"] < SMALLEST_TEXT_PX:
                problems.append(f"{t['text']!r} {t['px']:.1f} px")
            if not t["inside"]:
                problems.append(f"{t['text']!r} runs out of its chart")
            for other in texts[i + 1:]:
                (a, b, c, d), (e, f, g, h) = t["box"], other["box"]
                if min(c, g) - max(a, e) > 1 and min(d, h) - max(b, f) > 1:
                    problems.append(f"{t['text']!r} overlaps {other['text']!r}")
    return problems


def test_a_test_explained_by_another_tests_cause_is_not_listed_again():
    """Three students with sin and cos swapped: one row, which also holds the contracts test they failed because of
    it, and no "failed without a named cause" row."""
    contract = Problem("sinusoidal_positional_encoding returned the promised type, but its contract counts once it "
                       "passes its own tests")
    results = [NotebookResult(s, "positional_encoding", "positional_encoding", True,
                              [GradedTest("hidden_pe_values", "v", True, 0.0, 4.0, [swapped(1, True)]),
                               GradedTest("hidden_contracts", "c", True, 1.5, 2.0, [contract])], [])
               for s in ("ann", "bob", "cy")]
    mistakes, stubs = dashboard.grouped_mistakes(results)
    assert [(row.label, len(row.results), sorted(row.tests)) for row in mistakes] == [
        (SWAPPED, 3, ["hidden_contracts", "hidden_pe_values"])]
    assert mistakes[0].tests == {"hidden_pe_values": 12.0, "hidden_contracts": 1.5}     # each student's test once



def test_a_mistakes_cost_is_counted_in_the_points_of_the_grade_manual_grades_included(tmp_path):
    """The two-door walk: walker's positions start at 1 (hidden_pe_values 0/4, hidden_pe_stability 0/2), and the
    instructor gave hidden_pe_values its 4 points back in formgrader. The row still names walker, and says the
    mistake cost 2 points, as the grade (grades.csv, every page) has it; it said 4 + 2, the automatic loss."""
    course = Course(make_course(tmp_path / "course"))
    cause = "positions seem to start at 1; the first row is position 0"
    wrong = Problem(f"sinusoidal_positional_encoding(3, 4) is wrong at [1, 1]. Likely cause: {cause}.", cause)
    walker = NotebookResult("walker", "positional_encoding", "positional_encoding", True,
                            [GradedTest("hidden_pe_values", "v", True, 0.0, 4.0, [wrong]),
                             GradedTest("hidden_pe_stability", "s", True, 0.0, 2.0, [wrong])], [])
    by_hand = {("walker", "positional_encoding", "positional_encoding"): {"hidden_pe_values": (4.0, True),
                                                                          "hidden_pe_stability": (0.0, False)}}
    [row], _ = dashboard.grouped_mistakes([walker], by_hand)
    assert (row.label, [r.student for r in row.results], row.tests) == (cause, ["walker"], {"hidden_pe_stability": 2})
    page = dashboard.render(course, [walker], finals={("walker", "positional_encoding"): (4.0, 6.0)},
                            cell_scores=by_hand)
    cost = section(page, "Mistakes across the class", "Parts not attempted")
    assert "hidden_pe_stability (2)" in cost and "hidden_pe_values" not in cost and "walker" in cost
    [automatic], _ = dashboard.grouped_mistakes([walker])                 # without a gradebook: the automatic loss
    assert automatic.tests == {"hidden_pe_values": 4, "hidden_pe_stability": 2}


def test_the_tests_a_stopped_notebook_left_unrun_are_one_row():
    """A notebook whose process died in a cell of its own: every hidden test after it has no answer, for one reason;
    one row holds them all, not a "failed without a named cause" row per test."""
    why = "not run: the notebook was stopped in cell 6 (the one starting `import sys`) (see the notes above)"
    tests = [GradedTest(cell, cell, True, 0.0, 2.0, [Problem(why, kind=ProblemKind.NOT_RUN)])
             for cell in ("hidden_pe_values", "hidden_dot_product", "hidden_encoding_statistics")]
    mistakes, stubs = dashboard.grouped_mistakes([NotebookResult("ann", "positional_encoding", "positional_encoding",
                                                                 True, tests, [])])
    assert [(row.label, sorted(row.tests)) for row in mistakes] == [
        (why, ["hidden_dot_product", "hidden_encoding_statistics", "hidden_pe_values"])] and not stubs

NS = "{http://www.w3.org/2000/svg}"


def drawn(svg: str) -> dict:
    """What a chart shows, read from its drawing: its bars (tooltip, x, y, width, height) left to right, top to
    bottom, and its words with where they are (x, y, text)."""
    root = ElementTree.fromstring(svg)
    bars = [(rect.find(NS + "title").text, *(float(rect.get(k)) for k in ("x", "y", "width", "height")))
            for rect in root.iter(NS + "rect") if rect.find(NS + "title") is not None]
    words = [(float(t.get("x")), float(t.get("y")), t.text) for t in root.iter(NS + "text")]
    return {"bars": sorted(bars, key=lambda b: (b[2] + b[4], b[1])), "words": words}


def counts_on_the_axis(chart: dict) -> list[float]:
    """Each bar's height read against the chart's own count axis (its whole-number labels left of the bars)."""
    left = min(b[1] for b in chart["bars"])
    ticks = sorted((float(word), y) for x, y, word in chart["words"] if x < left and re.fullmatch(r"\d+", word))
    assert len(ticks) >= 2, ticks
    (low, y_low), (high, y_high) = ticks[0], ticks[-1]
    per_count = (y_low - y_high) / (high - low)
    return [height / per_count for *_, height in chart["bars"]]


def bars_by_tooltip(chart: dict, names) -> dict:
    """The bar each name's tooltip starts with (exactly one per name)."""
    found = {name: [b for b in chart["bars"] if b[0].startswith(name)] for name in names}
    assert all(len(bars) == 1 for bars in found.values()), found
    return {name: bars[0] for name, bars in found.items()}


def varied_class() -> list[NotebookResult]:
    """Twenty-three students of two assignments with scores and times spread out; one not graded."""
    results = []
    for i in range(23):
        tests = [GradedTest(cell, cell, True, points if (i * (k + 3)) % 7 > k else 0.0, points,
                            [] if (i * (k + 3)) % 7 > k else [Problem("wrong")])
                 for k, (cell, points) in enumerate([("hidden_pe_values", 4.0), ("hidden_dot_product", 2.0),
                                                     ("hidden_encoding_statistics", 1.0)])]
        assignment = "positional_encoding" if i % 3 else "rope_alibi"
        results.append(NotebookResult(f"s{i:02d}", assignment, assignment, i != 5, tests, [],
                                      seconds=1 + (i * 37 % 23) / 3))
    return results


def test_each_score_bar_holds_the_notebooks_of_its_tenth():
    results = varied_class()
    shares = [100 * r.score / r.max_score for r in results if r.graded]
    expected, _ = np.histogram(shares, bins=range(0, 101, 10))          # 100 % goes in the last tenth
    chart = drawn(dashboard.score_histogram(results).svg)
    bars = bars_by_tooltip(chart, [f"{lo}-{lo + 10} %" for lo in range(0, 100, 10)])
    assert [int(bar[0].split(": ")[1].split()[0]) for bar in bars.values()] == list(expected)
    assert counts_on_the_axis(chart) == pytest.approx(list(expected), abs=0.01)
    assert sum(expected) == len(shares) == 22
    labels = {word for *_, word in chart["words"]}
    assert all(str(count) in labels for count in expected if count)       # each count written above its bar


def test_each_pass_rate_bar_is_as_long_as_the_share_who_passed():
    results = varied_class()
    rates = dashboard.pass_rates(results)
    chart = drawn(dashboard.pass_rate_chart(rates).svg)
    track = max(b[3] for b in chart["bars"]) / max(p / n for p, n in rates.values())
    for assignment in ("positional_encoding", "rope_alibi"):
        graded = [r for r in results if r.graded and r.assignment == assignment]
        for cell in ("hidden_pe_values", "hidden_dot_product", "hidden_encoding_statistics"):
            passed = sum(t.passed for r in graded for t in r.tests if t.cell_id == cell)
            rows = [b for b in chart["bars"] if b[0] == f"{cell}: {passed} of {len(graded)} students passed"]
            assert rows, (cell, passed)
            assert any(b[3] == pytest.approx(track * passed / len(graded), abs=0.01) for b in rows)
    words = [word for *_, word in chart["words"]]
    first, second = sorted(words.index(a) for a in ("positional_encoding", "rope_alibi"))   # each heads its tests
    tests = {"hidden_pe_values", "hidden_dot_product", "hidden_encoding_statistics"}
    assert set(words[first:second]) & tests == tests and set(words[second:]) & tests == tests


def test_each_time_bar_holds_the_notebooks_of_its_bin():
    results = varied_class()
    seconds = [r.seconds for r in results if r.graded]
    expected, bounds = np.histogram(seconds, bins=10)
    chart = drawn(dashboard.time_chart(results).svg)
    assert counts_on_the_axis(chart) == pytest.approx(list(expected), abs=0.01)
    assert [bar[0] for bar in chart["bars"]][0].startswith(f"{bounds[0]:.1f}-{bounds[1]:.1f} s")
    one = drawn(dashboard.time_chart(results[:1]).svg)            # one notebook: one bar of one
    assert sorted(counts_on_the_axis(one), reverse=True)[:2] == pytest.approx([1, 0], abs=0.01)


def test_the_time_bins_of_a_fast_class_are_labelled_apart_and_near_their_bounds():
    results = [dataclasses.replace(r, seconds=0.30 + 0.02 * i) for i, r in enumerate(varied_class()) if r.graded]
    expected, bounds = np.histogram([r.seconds for r in results], bins=10)
    chart = drawn(dashboard.time_chart(results).svg)
    ranges = [bar[0].split(" s: ")[0] for bar in chart["bars"]]
    assert len(set(ranges)) == len(ranges) == 10, ranges
    step = bounds[1] - bounds[0]
    in_order = sorted(ranges, key=lambda r: float(r.split("-")[0]))
    for written, lo, hi in zip(in_order, bounds[:-1], bounds[1:], strict=True):
        assert [float(x) for x in written.split("-")] == pytest.approx([lo, hi], abs=step / 4), written


def test_chart_words_are_escaped():
    hostile = {("positional_encoding", HOSTILE): (1, 2), ("rope_alibi", "hidden_x"): (2, 2)}
    svg = dashboard.pass_rate_chart(hostile).svg
    assert "<script" not in svg and "<img" not in svg
    assert HOSTILE in [word for *_, word in drawn(svg)["words"]] + [b[0].split(": ")[0] for b in drawn(svg)["bars"]]


def test_a_contracts_test_a_stubbed_notebook_failed_is_shared_among_the_parts_not_attempted():
    """A notebook whose Part 1 (relative_position_index) and analysis (t5_buckets_used) are the template's stubs loses
    the contracts test's points for both: the rows of parts not attempted share them, a case each, instead of the
    contracts test's own answer cell ('analysis') being said to have cost them all."""
    def stub(function):
        return Problem(f"{function}(4, 6) raised NotImplementedError: the function is still the template stub",
                       error="NotImplementedError")
    tests = [GradedTest("hidden_relative_position_index", "i", True, 0.0, 2.0, [stub("relative_position_index")]),
             GradedTest("hidden_t5_buckets_used", "u", True, 0.0, 1.0, [stub("t5_buckets_used")]),
             GradedTest("hidden_relative_positions_contracts", "c", True, 1.0, 2.0,
                        [stub("relative_position_index"), stub("t5_buckets_used")])]
    _, stubs = dashboard.grouped_mistakes([NotebookResult("lee", "relative_positions", "relative_positions", True,
                                                          tests, [])])
    assert {row.label: row.tests for row in stubs} == {
        "shaw": {"hidden_relative_position_index": 2.0, "hidden_relative_positions_contracts": 0.5},
        "analysis": {"hidden_t5_buckets_used": 1.0, "hidden_relative_positions_contracts": 0.5}}


def test_a_stubbed_test_of_several_functions_is_its_own_parts_not_the_contracts_tests_answer_cell():
    """Part 2 (LearnedPositionalEncoding) left as the stub, every other part solved: its backward test judges two
    functions, one of which no other stubbed test of the part judges but the contracts test does. The old row
    shared that test with the contracts test's own answer cell, so the dashboard said 'self_attention' (solved) was
    not attempted and cost hidden_learned_backward 2 points."""
    stub = Problem("forward/backward failed: NotImplementedError: the function is still the template stub",
                   error="NotImplementedError")
    tests = [GradedTest(t, t, True, 0.0, REGISTRY[t].points, [stub]) for t in
             ("hidden_learned_init", "hidden_learned_forward", "hidden_learned_backward",
              "hidden_learned_accumulation")]
    tests.append(GradedTest("hidden_contracts", "c", True, 1.0, 2.0, [stub] * 4))
    _, stubs = dashboard.grouped_mistakes([NotebookResult("stu", "positional_encoding", "positional_encoding", True,
                                                          tests, [])])
    assert [row.label for row in stubs] == ["LearnedPositionalEncoding"]
    assert stubs[0].tests["hidden_learned_backward"] == REGISTRY["hidden_learned_backward"].points


def test_a_function_that_returns_a_list_is_labelled_by_the_mistake_and_its_fix_is_the_students():
    """The dashboard's label names what went wrong; the fix ('build the result with numpy...') is in the student's
    feedback (the problem's text) only. The old label was the fix."""
    from posenc_autograder.checks import contracts
    from posenc_autograder.checks.manifest import ARRAY
    said = contracts.kind_problem({"type": "list"}, ARRAY, "sinusoidal_positional_encoding(3, 4)")
    problem = Problem(str(said), said.cause)
    assert contracts.CAUSES["list"] in problem.text
    results = [NotebookResult(s, "positional_encoding", "positional_encoding", True,
                              [GradedTest("hidden_contracts", "c", True, 0.0, 2.0, [problem])], []) for s in "ab"]
    [row], _ = dashboard.grouped_mistakes(results)
    assert row.label == "returns a list where a float64 numpy ndarray is promised"
    assert contracts.CAUSES["list"] in row.example


def test_the_mistakes_table_fits_a_1000_px_window_without_sideways_scrolling(tmp_path, browser):  # noqa: F811
    """Long identifiers and a long example (a printed array, a reproduction) wrap in their cells: no table of the
    dashboard needs sideways scrolling at 1000 px. The 'One example' column ran off the table's box before."""
    course = Course(make_course(tmp_path / "course"))
    example = ("relative_position_matrix(pe_window_starting_at_position_25, k=3) returned M whose first 2x2 block is "
               "transposed: expected [[" + ", ".join(f"{x:.6f}" for x in np.linspace(-1, 1, 40)) + "]] "
               "got [[" + ",".join(f"{x:.6f}" for x in np.linspace(1, -1, 40)) + "]]. Likely cause: the block is "
               "transposed; with rows (sin, cos) it is [[cos, sin], [-sin, cos]]")
    tests = ["hidden_relative_position", "hidden_relative_positions_contracts", "hidden_dot_product_distance_values",
             "hidden_encoding_statistics_bounded_flag", "hidden_context_extension_contracts"]
    problem = Problem(example, "relative_position_matrix(pe_window_starting_at_position_25,k=3)[0:2,0:2] is transposed")
    results = [NotebookResult(f"student_with_a_long_identifier_{i}", "positional_encoding", "positional_encoding", True,
                              [GradedTest(t, t, True, 0.0, 2.0, [problem]) for t in tests], []) for i in range(6)]
    path = dashboard.write(course, results, refused=[], finals={(r.student, r.assignment): (0.0, 8.0) for r in results})
    page, problems = open_page(browser, path.as_uri(), width=1000)
    assert problems == []
    wide = page.evaluate("() => [...document.querySelectorAll('.wide')].map(d => d.scrollWidth - d.clientWidth)")
    shots = pathlib.Path(__file__).resolve().parents[2] / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "class-dashboard-1000.png"), full_page=True)
    assert wide and max(wide) <= 0, f"a table scrolls sideways by {max(wide)} px at 1000 px"
    page.close()


def test_student_names_keep_whole_words_and_what_happened_is_in_cell_order_at_1100_px(tmp_path, browser):  # noqa: F811
    """Students needing attention with long notes beside their ids, at 1100 px: an id, a name or an assignment is
    never broken inside a word ('checkrais e' before: every cell could break anywhere, so a narrow column broke
    names first), and each student's notes are in the order of the cells they are about (they were in the order
    grading found them)."""
    course = Course(make_course(tmp_path / "course"))
    said = ("the answer cell 'dot_product_and_statistics' raised ValueError: setting an array element with a "
            "sequence. The requested array has an inhomogeneous shape after 1 dimensions (line 41), after it had "
            "defined its functions")
    notes = [Note(NoteKind.OWN_CELL_RAISED, f"cell 14, a cell of your own, raised `{said}`", cell=13),
             Note(NoteKind.RAISED_AFTER_DEFINING, said, cell=9),
             Note(NoteKind.SKIPPED_MAGIC, "line 1 of cell 4, `%timeit sinusoidal_positional_encoding(64, 32)`, was "
                                          "skipped: timing is not graded; the rest of the cell ran", cell=3)]
    ids = ["checkraise", "helperafter", "ownraises", "timeitanswer"]
    results = [NotebookResult(student, "positional_encoding", "positional_encoding", True,
                              [GradedTest("hidden_pe_values", "values", True, 0.0, 4.0, [Problem(STUB)])], notes)
               for student in ids]
    path = dashboard.write(course, results, refused=[], finals={(r.student, r.assignment): (0.0, 4.0) for r in results})
    text = path.read_text()
    rows = text.split("Students who need attention")[1].split("Every student")[0]
    assert rows.index("line 1 of cell 4") < rows.index("after it had defined") < rows.index("cell 14, a cell")
    page, problems = open_page(browser, path.as_uri(), width=1100)
    assert problems == []
    broken = page.evaluate("""() => [...document.querySelectorAll('td.who')].flatMap(td => {
        const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT), found = [];
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const range = document.createRange();
            range.selectNodeContents(node);
            const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
            const word = node.textContent.trim() && !node.textContent.includes(' ');
            if (word && tops.size > 1) found.push(node.textContent);
        }
        return found;
    })""")
    page.close()
    assert broken == [], f"broken inside a word at 1100 px: {broken}"


def test_a_fix_first_an_instructor_restored_by_hand_is_not_a_reason_for_attention(tmp_path):
    """The student's page stops naming a "Fix this first" cause once an instructor restores by hand the tests it
    failed (feedback.notes_as_scored); the dashboard listed the student still, for 'one cause explains several
    failures' naming the restored test. It states the notes as the page does."""
    from posenc_autograder.grading.fix_first import fix_this_first
    course = Course(make_course(tmp_path / "course"))
    tests = [GradedTest(cell, cell, True, 0.0, 2.0, [Problem(f"{cell} is wrong. Likely cause: {SWAPPED}.", SWAPPED)])
             for cell in ("hidden_pe_values", "hidden_pe_stability")]
    walker = NotebookResult("walker", "positional_encoding", "positional_encoding", True, tests, fix_this_first(tests))
    key = ("walker", "positional_encoding", "positional_encoding")
    listed = section(dashboard.render(course, [walker]), "Students who need attention", "Every student")
    assert "walker" in listed and "Fix this first" in listed
    restored = {key: {"hidden_pe_values": (2.0, True), "hidden_pe_stability": (0.0, False)}}
    listed = section(dashboard.render(course, [walker], cell_scores=restored), "Students who need attention",
                     "Every student")
    assert "walker" not in listed and "Fix this first" not in listed


def test_a_share_of_points_is_read_with_two_decimals_at_most():
    """The dashboard's cost of a part not attempted, a third of the contracts test's lost half point: it read
    'hidden_contracts (0.166667)' (fails on the old code); scores keep their halves and a late deduction's cents."""
    from posenc_autograder.reports.templating import number
    assert [number(v) for v in (0.5 / 3, 2 / 3, 17.5, 35.55, 42.0, 0.0)] == ["0.17", "0.67", "17.5", "35.55", "42", "0"]
