"""The order in which the suite's two workers get their groups (tests/support/run_order.py): the book's build first,
its readers only once it is built, the rest longest first, so that the run ends when the work does. Played out here
on xdist's own scheduler with made-up groups and seconds: a worker asks for work when it has two tests or fewer left."""
import json
from types import SimpleNamespace

import run_order
from xdist.scheduler import LoadGroupScheduling


class Worker:
    def __init__(self, name):
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices):
        self.sent += indices

    def shutdown(self):
        self.shutting_down = True


class Quiet:
    """xdist's log, silenced."""
    def __getattr__(self, name):
        return self

    def __call__(self, *args):
        pass


def config():
    return SimpleNamespace(getvalue=lambda name: {"tx": ["2*popen"], "dist": "loadgroup"}[name],
                           option=SimpleNamespace(loadscopereorder=True))


# group -> (tests, seconds each); the book's build (BUILD seconds) is made by the first test that needs it, its
# group's or a reader's; a reader on the other worker meanwhile waits for it (tests/conftest.py's lock)
BUILD = 180.0
SUITE = {"book": (4, 5.0), "book:desktop": (2, 75.0), "book:test_pages_read_at_phone_width": (1, 150.0),
         "tests/end_to_end/test_mutation.py": (2, 100.0), "tests/grading/test_many.py": (40, 1.0),
         "tests/checks/test_catalogue.py": (60, 0.5)}
WORK = BUILD + sum(count * seconds for count, seconds in SUITE.values())


def collection():
    return [f"tests/x/test_{group.replace('/', '_').replace(':', '_')}.py::test_{i}@{group}"
            for group, (count, _) in SUITE.items() for i in range(count)]


def play(scheduler) -> tuple[dict, float]:
    """Run the scheduled suite on two simulated workers; return (group -> start time, the run's end)."""
    nodes = [Worker("gw0"), Worker("gw1")]
    tests = collection()
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, tests)
    scheduler.schedule()
    clock = {node: 0.0 for node in nodes}
    done = {node: 0 for node in nodes}
    started: dict[str, float] = {}
    built_at: list[float] = []

    def group(node):
        return run_order.group_of(tests[node.sent[done[node]]])

    def end(node):
        if not group(node).startswith(run_order.BUILD_GROUP):
            return clock[node] + SUITE[group(node)][1]
        ready = built_at[0] if built_at else clock[node] + BUILD
        return max(clock[node], ready) + SUITE[group(node)][1]

    while any(done[node] < len(node.sent) for node in nodes):     # the next test to end, ends
        node = min((n for n in nodes if done[n] < len(n.sent)), key=end)
        if group(node).startswith(run_order.BUILD_GROUP) and not built_at:
            built_at.append(clock[node] + BUILD)
        started.setdefault(group(node), clock[node])
        clock[node] = end(node)
        index = node.sent[done[node]]
        done[node] += 1
        scheduler.mark_test_complete(node, index)
    return started, max(clock.values())


def test_the_build_goes_first_its_readers_after_it_and_the_rest_longest_first(tmp_path):
    started, end = play(run_order.make_scheduler(config(), Quiet(), tmp_path, lambda nodeid: "end_to_end" in nodeid))
    assert started["book"] == 0.0
    assert started["tests/end_to_end/test_mutation.py"] == 0.0          # a slow group never timed: guessed long
    built = BUILD + 4 * 5.0
    assert min(started["book:desktop"], started["book:test_pages_read_at_phone_width"]) >= built
    assert end <= WORK / 2 + 5.0, started          # both workers end together, within one short test


def test_xdists_own_order_ends_later_so_this_test_can_fail(tmp_path):
    _, ours = play(run_order.make_scheduler(config(), Quiet(), tmp_path, lambda nodeid: "end_to_end" in nodeid))
    _, xdists = play(LoadGroupScheduling(config(), Quiet()))
    assert xdists > ours + 50.0


def test_the_last_runs_seconds_decide_the_order(tmp_path):
    """A light group that took longest last time goes out first after the build."""
    (tmp_path / "test.json").write_text(json.dumps({"groups": {"tests/checks/test_catalogue.py": 500.0}}))
    (tmp_path / "cut-short.json").write_text("{\"gro")
    started, _ = play(run_order.make_scheduler(config(), Quiet(), tmp_path, lambda nodeid: False))
    assert started["tests/checks/test_catalogue.py"] == 0.0 and started["book"] == 0.0


def test_the_record_keeps_each_tests_phases_and_each_groups_sum():
    durations = run_order.Durations()
    for nodeid, when, seconds in [("a.py::t1@book", "setup", 100.0), ("a.py::t1@book", "call", 2.0),
                                  ("a.py::t2@book", "call", 1.0), ("b.py::t[x]", "call", 50.0)]:
        durations.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when=when, duration=seconds))
    assert durations.groups() == {"book": 103.0, "b.py": 50.0}
    assert durations.slowest(2) == [{"test": "a.py::t1", "seconds": 102.0, "setup": 100.0},
                                    {"test": "b.py::t[x]", "seconds": 50.0, "setup": 0.0}]


def test_the_timeline_shows_each_workers_groups_in_the_order_they_ran():
    durations = run_order.Durations()
    worker = {name: SimpleNamespace(gateway=SimpleNamespace(id=name)) for name in ("gw0", "gw1")}
    for nodeid, node, start, stop in [("a.py::t1@book", "gw0", 1000.0, 1060.0), ("b.py::t1", "gw1", 1001.0, 1005.0),
                                      ("a.py::t2@book", "gw0", 1060.0, 1061.5), ("c.py::t1", "gw1", 1005.0, 1090.0),
                                      ("d.py::t1", "gw0", 1070.0, 1071.0)]:
        durations.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when="call", duration=stop - start,
                                                           node=worker[node], start=start, stop=stop))
    assert durations.timeline(started=1000.0) == {
        "gw0": [["book", 0.0, 61.5], ["d.py", 70.0, 71.0]],
        "gw1": [["b.py", 1.0, 5.0], ["c.py", 5.0, 90.0]]}


def root_conftest():
    import importlib.util
    import pathlib
    spec = importlib.util.spec_from_file_location("root_conftest", pathlib.Path(__file__).parents[2] / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_books_readers_are_groups_by_what_they_share_and_xdist_reads_each_back():
    group_of = root_conftest().group_of
    crawl = "tests/book/test_browser.py::test_every_page_{}[share {} of 2]"
    desktop = {"book_build", "site", "browser", "desktop_pages"}
    groups = {nodeid: group_of(nodeid, fixtures) for nodeid, fixtures in [
        (crawl.format("loads_cleanly", 1), desktop), (crawl.format("passes_axe", 1), desktop),
        (crawl.format("loads_cleanly", 2), desktop),
        ("tests/book/test_pdf.py::test_formulas", {"book_build", "book_pdf"}),
        ("tests/book/test_browser.py::test_internal_links_resolve", {"book_build", "site", "book_pdf"}),
        ("tests/book/test_browser.py::test_phone[a]", {"book_build", "site"}),
        ("tests/book/test_browser.py::test_phone[b]", {"book_build", "site"}),
        ("tests/book/test_book.py::test_builds", {"book_build"}), ("tests/x/test_y.py::test_z[1]", set())]}
    assert list(groups.values()) == ["book:desktop share 1 of 2", "book:desktop share 1 of 2",
                                     "book:desktop share 2 of 2", "book:pdf", "book:pdf", "book:test_phone a",
                                     "book:test_phone b", "book", "tests/x/test_y.py"]
    assert all(run_order.group_of(f"{nodeid}@{group}") == group for nodeid, group in groups.items())


def test_a_fresh_clone_guesses_long_the_files_that_mark_slow_tests():
    """With no record yet (CI's fresh clone), a file that marks its tests slow, hub or browser goes out early; an
    unmarked file of quick tests does not."""
    heavy = root_conftest().is_heavy
    assert heavy("tests/authoring/test_exercise_layout.py::test_committed_exercises_equal_a_fresh_generation")
    assert heavy("tests/grading/test_kernel_semantics.py::test_x@tests/grading/test_kernel_semantics.py")
    assert heavy("tests/portal/test_hub.py::test_x") and heavy("tests/end_to_end/test_wheel.py::test_x")
    assert not heavy("tests/checks/test_catalogue.py::test_x[a]@tests/checks/test_catalogue.py")


def test_a_new_checkout_orders_its_groups_by_the_machines_last_runs(tmp_path):
    """A clone's first run has no record of its own: it takes the machine's (any checkout's last runs), so that a
    group it would guess at a tenth of a second a test goes out by what it took; the checkout's own record wins."""
    own, machine = tmp_path / "own", tmp_path / "machine"
    own.mkdir()
    machine.mkdir()
    (machine / "test-fast.json").write_text(json.dumps({"groups": {"tests/a.py": 15.0, "tests/b.py": 2.0}}))
    assert run_order.known_seconds(own, machine) == {"tests/a.py": 15.0, "tests/b.py": 2.0}
    (own / "test-fast.json").write_text(json.dumps({"groups": {"tests/b.py": 4.0}}))
    assert run_order.known_seconds(own, machine) == {"tests/a.py": 15.0, "tests/b.py": 4.0}
    assert run_order.known_seconds(own) == {"tests/b.py": 4.0}
