"""The simulated students' HTTP client in `make bench-portal`: HTTP/1.1 over one kept-alive connection, with what
the students' pages use and nothing more (cookies, GET, a multipart upload, bodies sized by Content-Length or sent
in chunks).

A real class's browsers run on their own machines; the simulated ones share the portal's two cores, so what they
spend is taken from the portal. httpx spent about 2 ms of CPU a request here (about 0.1 ms for this client,
measured in one process against the same server), some 0.02 CPU-s a student in a rush of 2,000.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import urllib.parse
from collections.abc import Callable

MAX_HEAD = 64 * 1024                 # the portal's answers carry a few headers; anything larger is a broken answer


class TransportError(Exception):
    """The connection failed: refused, dropped, timed out, or an answer that is not HTTP."""


class Response:
    def __init__(self, status_code: int, headers: dict[str, str], content: bytes):
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self):
        return json.loads(self.content)


class StudentClient:
    """One student's browser: its cookies and one connection to `base_url` (http://host:port), opened again when
    the portal has closed it."""

    def __init__(self, base_url: str, timeout: float, on_request: Callable[[], None] | None = None):
        address = urllib.parse.urlsplit(base_url)
        self.host, self.port, self.timeout = address.hostname, address.port or 80, timeout
        self.on_request = on_request or (lambda: None)
        self.cookies: dict[str, str] = {}
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def get(self, path: str, timeout: float | None = None) -> Response:
        """`timeout`: this request's own, longer than the client's for a stream read to its end."""
        return await self._request("GET", path, b"", {}, timeout)

    async def post(self, path: str, data: dict[str, str], files: dict[str, tuple[str, bytes]]) -> Response:
        boundary = secrets.token_hex(16)
        parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
                 for name, value in data.items()]
        for name, (filename, content) in files.items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                         f'Content-Type: application/octet-stream\r\n\r\n'.encode() + content + b"\r\n")
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        return await self._request("POST", path, body, {"Content-Type": f"multipart/form-data; boundary={boundary}"})

    async def aclose(self) -> None:
        self._close()

    async def _request(self, method: str, path: str, body: bytes, headers: dict[str, str],
                       timeout: float | None = None) -> Response:
        self.on_request()
        try:
            return await asyncio.wait_for(self._exchange(method, path, body, headers), timeout or self.timeout)
        except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                ValueError) as exc:
            self._close()
            raise TransportError(f"{method} {path}: {type(exc).__name__}") from exc

    async def _exchange(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Response:
        if self._writer is None or self._writer.is_closing() or self._reader.at_eof():
            self._close()
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port, limit=MAX_HEAD)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept: */*",
                 "User-Agent: posenc-bench-student", f"Content-Length: {len(body)}" if method == "POST" else "",
                 "Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()) if self.cookies else "",
                 *(f"{k}: {v}" for k, v in headers.items())]
        self._writer.write("\r\n".join(line for line in lines if line).encode("latin-1") + b"\r\n\r\n" + body)
        await self._writer.drain()
        status, answer_headers, closes = await self._head()
        content = await self._body(status, answer_headers)
        if closes:
            self._close()
        return Response(status, answer_headers, content)

    async def _head(self) -> tuple[int, dict[str, str], bool]:
        head = (await self._reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        version, status = head[0].split(" ", 2)[:2]
        headers: dict[str, str] = {}
        for line in head[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                self._keep_cookie(value)
            headers[name] = value
        closes = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
        return int(status), headers, closes

    async def _body(self, status: int, headers: dict[str, str]) -> bytes:
        if status in (204, 304) or 100 <= status < 200:
            return b""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = []
            while size := int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16):
                chunks.append(await self._reader.readexactly(size + 2))
                chunks[-1] = chunks[-1][:-2]
            await self._reader.readuntil(b"\r\n")            # the last chunk's line ends the trailer
            return b"".join(chunks)
        if "content-length" in headers:
            return await self._reader.readexactly(int(headers["content-length"]))
        content = await self._reader.read()                   # sized by the connection's end
        self._close()
        return content

    def _keep_cookie(self, header: str) -> None:
        pair, *attributes = header.split(";")
        name, _, value = pair.strip().partition("=")
        if any(a.strip().lower() == "max-age=0" for a in attributes) or not value.strip('"'):   # a deletion
            self.cookies.pop(name, None)
        else:
            self.cookies[name] = value

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
