"""bench-portal counts the database server's CPU with the portal's: on PostgreSQL the queries' work is done by the
server's backends, outside the portal's processes (on SQLite it is inside them, already counted)."""
import os
import time

import pytest
from sqlalchemy import create_engine, text

from posenc_autograder.devtools import portal_load
from posenc_autograder.devtools.postgres import server_cpu_seconds


@pytest.mark.postgres
def test_the_servers_cpu_counts_every_backends_work_also_one_that_has_ended(postgres_url):
    database = server_cpu_seconds(postgres_url)
    before = portal_load.cpu_seconds(os.getpid(), database)["database"]
    engine = create_engine(postgres_url)
    with engine.connect() as db:           # a backend's work, then the backend gone (its CPU in the postmaster's)
        db.execute(text("SELECT count(*) FROM generate_series(1, 5000000)")).scalar()
    engine.dispose()
    deadline = time.monotonic() + 10        # the postmaster reaps the ended backend on its own time
    while (used := portal_load.cpu_seconds(os.getpid(), database)["database"] - before) < 0.2 \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert used >= 0.2


def test_sqlite_has_no_server_its_work_is_in_the_processes_that_query_it():
    assert portal_load.cpu_seconds(os.getpid())["database"] == 0.0
    assert portal_load.database_share({"database_cpu": 0.0}, 10) == "in the processes above (SQLite)"
    assert portal_load.database_share({"database_cpu": 5.0}, 10) == "0.500 s"
