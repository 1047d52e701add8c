"""Read an untrusted zip (an LMS download) within limits: which members are usable, and their bytes.

Nothing is extracted to disk here; callers get bytes read with a hard cap, whatever the zip's
headers claim. Nested archives are reported, never opened.
"""
from __future__ import annotations

import dataclasses
import stat
import zipfile

from posenc_autograder.intake.submissions import MAX_NOTEBOOK_BYTES

MAX_MEMBERS = 5_000                     # an LMS download of a large class has a few thousand files
MAX_MEMBER_BYTES = MAX_NOTEBOOK_BYTES   # a notebook in a zip is capped as one submitted directly
MAX_TOTAL_BYTES = 500_000_000           # everything read from one zip
MAX_NAME_LENGTH = 400
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".7z", ".rar", ".jar", ".whl")


class UnsafeArchive(Exception):
    """The whole zip is refused (not a zip, or far too many members); nothing was taken from it."""


@dataclasses.dataclass(frozen=True)
class Member:
    name: str                            # the path inside the zip, as stored
    info: zipfile.ZipInfo


def refusal(info: zipfile.ZipInfo) -> str | None:
    """Why a member must not be used (None: it may be read). Member names are attacker-chosen."""
    name = info.filename
    if len(name) > MAX_NAME_LENGTH:
        return "its name is too long"
    if "\x00" in name or any(ord(ch) < 32 for ch in name):
        return "its name contains control characters"
    if "\\" in name:
        return "its name contains a backslash (not a zip path separator)"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "its name is an absolute path"
    if any(part in ("..", ".") for part in name.split("/")):
        return "its name climbs out of the archive ('..')"
    mode = info.external_attr >> 16          # Unix mode, when the zip was made on Unix
    if stat.S_ISLNK(mode):
        return "it is a symbolic link"
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "it is not a regular file"
    if name.lower().endswith(ARCHIVE_SUFFIXES):
        return "it is an archive inside the archive (nested archives are not expanded)"
    if info.flag_bits & 0x1:
        return "it is encrypted"
    return None


class SafeZip:
    """The members of one zip, with a byte budget shared by every read."""

    def __init__(self, path, member_bytes: int = MAX_MEMBER_BYTES):
        self.member_bytes = member_bytes
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise UnsafeArchive(f"'{path}' is not a readable zip file ({exc})") from None
        infos = self._zip.infolist()
        if len(infos) > MAX_MEMBERS:
            self._zip.close()
            raise UnsafeArchive(f"'{path}' holds {len(infos)} files, more than the {MAX_MEMBERS} accepted")
        self.members = [Member(i.filename, i) for i in infos if not i.is_dir()]
        self.budget = MAX_TOTAL_BYTES

    def read(self, member: Member, limit: int | None = None) -> bytes:
        """The member's bytes (at most `limit`, else member_bytes); ValueError (with a reason) when it is larger
        than allowed or corrupt."""
        limit = self.member_bytes if limit is None else limit
        cap = min(limit, self.budget)
        try:
            with self._zip.open(member.info) as stream:
                data = stream.read(cap + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise ValueError(f"it could not be read ({type(exc).__name__})") from None
        if len(data) > cap:
            raise ValueError(f"it expands to more than {cap / 1e6:g} MB" if cap == limit else
                             "the zip expands to more than the total accepted "
                             f"({MAX_TOTAL_BYTES / 1e6:g} MB); the rest was not read")
        self.budget -= len(data)
        return data

    def close(self) -> None:
        self._zip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
