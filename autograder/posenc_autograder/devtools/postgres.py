"""A throwaway PostgreSQL server on 127.0.0.1 for the scale test and the portal's load test (Debian's binaries;
as root, the server runs as the postgres user)."""
from __future__ import annotations

import contextlib
import glob
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import typing

import psutil
from sqlalchemy.pool import NullPool


class PostgresMissing(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres_server(max_connections: int = 100):
    """Yields the SQLAlchemy URL of a fresh database 'gradebook'; everything is removed afterwards."""
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not binaries:
        raise PostgresMissing("PostgreSQL is not installed: `make system-packages` installs it (package postgresql)")
    bindir = pathlib.Path(binaries[-1]).parent
    home = pathlib.Path(tempfile.mkdtemp(prefix="posenc-pg-"))   # pytest's tmp is private to root
    home.chmod(0o755)
    data = home / "pgdata"
    data.mkdir()
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_postgres:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    subprocess.run(as_postgres + [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "posenc"],
                   check=True, capture_output=True)
    subprocess.run(as_postgres + [str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(data / "log"), "-o",
                                  f"-p {port} -k {data} -c listen_addresses=127.0.0.1 "
                                  f"-c max_connections={max_connections}", "start"], check=True, capture_output=True)
    try:
        subprocess.run(as_postgres + [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "posenc",
                                      "gradebook"], check=True, capture_output=True)
        yield f"postgresql+psycopg2://posenc@127.0.0.1:{port}/gradebook"
    finally:
        subprocess.run(as_postgres + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def server_cpu_seconds(url: str) -> typing.Callable[[], float]:
    """CPU seconds so far of the server at `url` (on this machine): its postmaster, every backend alive and every
    one that has ended (reaped by the postmaster, so counted in its children's times). A benchmark counts the
    database's work with the portal's: SQLite's runs inside the processes that query it."""
    from sqlalchemy import create_engine, text
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as db:
            postmaster = psutil.Process(db.execute(text("SELECT pg_backend_pid()")).scalar_one()).parent()
    finally:
        engine.dispose()

    def seconds() -> float:
        own = postmaster.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        for backend in postmaster.children():
            with contextlib.suppress(psutil.Error):
                times = backend.cpu_times()
                total += times.user + times.system
        return total
    return seconds
