"""The bench's lean student client answers as httpx does for everything the simulated students ask of the portal:
a sign-in that sets a cookie and redirects, pages sent whole or in chunks, a multipart upload the portal's form
parser reads, a 204, and a connection the server closes."""
from __future__ import annotations

import hashlib

import httpx
import pytest
from own_loop import run_in_own_loop
from served import free_port, server_of, serving
from starlette.applications import Starlette
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from posenc_autograder.devtools.student_client import StudentClient, TransportError


async def sign_in(request):
    answer = RedirectResponse("/page", status_code=303)
    answer.set_cookie("session", "s3cret", httponly=True)
    answer.set_cookie("stale", "x")
    return answer


async def forget(request):
    answer = JSONResponse({"ok": True})
    answer.delete_cookie("stale")
    return answer


async def page(request):
    return JSONResponse({"cookies": dict(request.cookies), "query": dict(request.query_params)})


async def chunked(request):
    async def parts():
        for i in range(5):
            yield f"part {i};".encode() * 1000
    return StreamingResponse(parts(), media_type="text/plain")


async def upload(request):
    form = await request.form()
    notebook = form["notebook"]
    content = await notebook.read()
    return JSONResponse({"csrf": form["csrf"], "filename": notebook.filename,
                         "sha256": hashlib.sha256(content).hexdigest()}, status_code=303,
                        headers={"location": "/attempts/7?new=1", "retry-after": "3"})


async def nothing(request):
    return Response(status_code=204)


async def closing(request):
    return JSONResponse({"closed": True}, headers={"connection": "close"})


APP = Starlette(routes=[Route("/sign-in", sign_in), Route("/forget", forget), Route("/page", page),
                        Route("/chunked", chunked), Route("/upload", upload, methods=["POST"]),
                        Route("/nothing", nothing), Route("/closing", closing)])


@pytest.fixture(scope="module")
def base():
    with serving(server_of(APP, log_level="error")) as server:
        yield server.url


NOTEBOOK = b'{"cells": []}' * 5000 + bytes(range(256))


async def conversation(client) -> list:
    """What a student's pages ask, in order; each answer as (status, body, the headers the bench reads)."""
    seen = []

    async def note(answer):
        seen.append((answer.status_code, answer.content, answer.headers.get("location"),
                     answer.headers.get("retry-after")))
    await note(await client.get("/sign-in"))
    await note(await client.get("/page?since=queued"))
    await note(await client.get("/chunked"))
    await note(await client.post("/upload", data={"csrf": "token-1"}, files={"notebook": ("nb.ipynb", NOTEBOOK)}))
    await note(await client.get("/nothing"))
    await note(await client.get("/closing"))
    await note(await client.get("/forget"))
    await note(await client.get("/page"))                 # on a new connection, without the deleted cookie
    return seen


def test_the_lean_client_sees_what_httpx_sees(base):
    async def both():
        async with httpx.AsyncClient(base_url=base) as reference:
            expected = await conversation(reference)
        lean = StudentClient(base, timeout=30)
        try:
            return expected, await conversation(lean)
        finally:
            await lean.aclose()
    expected, seen = run_in_own_loop(both())
    assert seen == expected
    assert b"s3cret" in seen[1][1] and b"stale" not in seen[-1][1]       # the comparison is not of two blanks


def test_a_closed_port_is_a_transport_error():
    port = free_port()      # nothing serves on it

    async def ask():
        client = StudentClient(f"http://127.0.0.1:{port}", timeout=5)
        await client.get("/")
    with pytest.raises(TransportError):
        run_in_own_loop(ask())
