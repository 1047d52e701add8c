"""autograder/reports/class.html: self-contained, every figure described, student text inert, and it opens
cleanly in Chromium (the browser fixture comes from conftest, the page loader from test_browser)."""
import html.parser
import pathlib

import pytest

from fixture_submissions import make_course
from posenc_autograder import csvsafe
from posenc_autograder.reports import dashboard, run_report as report
from posenc_autograder.intake import roster
from posenc_autograder.course import Course
from posenc_autograder.results import GradedTest, NotebookResult
from test_browser import open_page

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
SWAPPED = "sin and cos are swapped"


def result(student, passed, notes=(), graded=True, seconds=1.5):
    """A result with two hidden tests; `passed` says which of them pass."""
    tests = [GradedTest("hidden_pe_values", "values", True, 3.0 if passed[0] else 0.0, 3.0,
                        [] if passed[0] else [SWAPPED]),
             GradedTest("hidden_dot_product", "dot", True, 2.0 if passed[1] else 0.0, 2.0,
                        [] if passed[1] else [f"raised ValueError: {HOSTILE}"])]
    return NotebookResult(student, "positional_encoding", "positional_encoding", graded, tests, list(notes),
                          seconds=seconds)


@pytest.fixture
def class_page(tmp_path):
    course = Course(make_course(tmp_path / "course"))
    results = [result("ann", (True, True)), result("bob", (False, True)), result("cy", (False, False)),
               result("dee", (False, False), ["cell 'hidden_dot_product' ran longer than 30 s and was stopped"]),
               result("eve", (False, False), ["the notebook could not be read: " + HOSTILE], graded=False)]
    roster.save(course, {("bob", "positional_encoding"): {
        "student_id": "bob", "assignment": "positional_encoding", "lms": "canvas", "lms_user_id": "7",
        "name": HOSTILE, "submitted_at": "2026-11-20T10:00:00", "late": "yes"}})
    path = dashboard.write(course, results, refused=[f"{HOSTILE}: the folder is a symbolic link"])
    return course, results, path


class Parsed(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.images, self.links, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.images.append(attrs)
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
    assert "script" not in page.tags and "link" not in page.tags
    assert len(page.images) == 3
    for image in page.images:
        assert image["src"].startswith("data:image/svg+xml;base64,")
        assert len(image.get("alt", "")) > 30
    assert "http://" not in path.read_text().replace("http://www.w3.org", "") and "https://" not in path.read_text()


def test_alt_text_states_the_figures_numbers(class_page):
    _, results, path = class_page
    alts = [image["alt"] for image in parse(path).images]
    # 4 graded notebooks: 0 %, 0 %, 40 % (2 of 5 points), 100 %  -> bins 0-10: 2, 40-50: 1, 90-100: 1
    assert "2, 0, 0, 0, 1, 0, 0, 0, 0, 1" in alts[0]
    assert "hidden_pe_values 25 %" in alts[1] and "hidden_dot_product 50 %" in alts[1]
    assert "median 1.5 s" in alts[2] and "over 4 notebooks" in alts[2]


def test_student_text_is_escaped(class_page):
    _, _, path = class_page
    text = path.read_text()
    assert HOSTILE not in text and "&lt;script&gt;" in text
    assert "alert" in "".join(parse(path).text)       # shown as text, not run


def test_mistakes_are_grouped_with_who_made_them(class_page):
    _, _, path = class_page
    rows = [line for line in path.read_text().splitlines() if SWAPPED in line]
    assert len(rows) == 1 and "<td>3</td>" in rows[0] and "bob, cy, dee" in rows[0]


def test_students_needing_attention_and_feedback_links(class_page):
    course, results, path = class_page
    text = path.read_text()
    attention = text.split("Students who need attention")[1].split("Every student")[0]
    assert "dee" in attention and "timeout" in attention and "eve" in attention and "not graded" in attention
    assert ">ann<" not in attention
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;: the folder is a " \
           "symbolic link" in attention and "3 need attention" in text
    links = parse(path).links
    assert len(links) == len(results)
    for link in links:
        assert (path.parent / link).resolve().parent.parent.parent == course.feedback.resolve()
    assert "late" in text.split("Every student")[1].split("bob")[1].split("</tr>")[0]


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
    sizes = page.evaluate("() => [...document.images].map(i => [i.naturalWidth, i.alt.length])")
    assert len(sizes) == 3 and all(w > 0 and alt > 30 for w, alt in sizes)
    shots = pathlib.Path(__file__).resolve().parents[2] / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "class-dashboard.png"), full_page=True)
    page.close()
