"""Which SQL statements only read: what a PostgreSQL connection may run outside a transaction (models.py)."""
import functools
import re

# A statement that only reads: a SELECT taking no row lock. Anything else (a write, DDL, a locking read, a WITH
# that might write) starts the transaction.
ONLY_READS = re.compile(r"\s*SELECT\b(?!.*\bFOR\s+(UPDATE|SHARE|NO\s+KEY|KEY)\b)", re.IGNORECASE | re.DOTALL)


@functools.lru_cache(maxsize=1024)
def only_reads(statement: str) -> bool:
    """ONLY_READS' answer, kept by statement: the portal runs the same few dozen statements (SQLAlchemy's cached
    strings), and the pattern's look-ahead took 0.05-0.28 ms a statement, the longer the slower, at every read."""
    return ONLY_READS.match(statement) is not None
