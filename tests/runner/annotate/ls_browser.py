"""Label Studio's labeling page in headless Chromium, driven over the DevTools protocol.

The REST round trip (``test_label_studio.py``) submits results written by hand; only the page
itself shows what a labeling config's controls really write (a ``Repeater`` names its
controls per item when it renders). ``Page`` logs in as the test user, opens a task and acts
as a person does: real mouse presses on the boxes, a drag over a passage, typed text, Submit.
Chromium is ``$CHROMIUM_BIN`` or the first of ``chromium``, ``chromium-browser``,
``google-chrome`` on the PATH; the caller skips when there is none.
"""

from __future__ import annotations

import asyncio
import base64
import http.cookiejar
import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

from tests.helpers.ports import free_port
from tests.runner.annotate.ls_server import USER, Server

LOAD_TIMEOUT_S = 90.0
AREA_LEFT = 200
"""Pixels: the labeling area starts right of the data manager's task list (which has its own
checkboxes and a preview of each task's text)."""
IN_AREA = f"(e => e.getBoundingClientRect().left > {AREA_LEFT})"
"""A JavaScript predicate: the element is in the labeling area."""


def chromium() -> str | None:
    """The Chromium executable, or None."""
    given = os.environ.get("CHROMIUM_BIN")
    if given:
        return given
    names = ("chromium", "chromium-browser", "google-chrome")
    return next((path for name in names if (path := shutil.which(name))), None)


def session_cookies(server: Server) -> dict[str, str]:
    """The test user's Django session (its login form, as a browser posts it)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login = server.url + "/user/login/"
    opener.open(login, timeout=60).read()
    csrf = next((c.value for c in jar if c.name == "csrftoken"), "")
    form = {"email": USER, "password": "roundtrip-password", "csrfmiddlewaretoken": csrf}
    request = urllib.request.Request(login, urllib.parse.urlencode(form).encode())
    request.add_header("Referer", login)
    opener.open(request, timeout=60).read()
    cookies = {c.name: str(c.value) for c in jar}
    if "sessionid" not in cookies:
        raise AssertionError("Label Studio's login form gave no session")
    return cookies


class Page:
    """One page of headless Chromium (``async with Page(binary, profile) as page``)."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.binary, self.profile = binary, profile
        self.calls = 0

    async def __aenter__(self) -> Page:
        port = free_port()
        command = [
            self.binary, "--headless=new", "--no-sandbox", "--disable-gpu",
            f"--remote-debugging-port={port}", f"--user-data-dir={self.profile}",
            "--window-size=1400,2200", "about:blank",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        url = _page_socket(port, self.process)
        self.http = aiohttp.ClientSession()
        self.socket = await self.http.ws_connect(url, max_msg_size=0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.socket.close()
        await self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; its result."""
        self.calls += 1
        me = self.calls
        await self.socket.send_json({"id": me, "method": method, "params": params})
        while True:
            message = await self.socket.receive_json()
            if message.get("id") == me:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    async def value(self, expression: str) -> Any:
        """A JavaScript expression's value (JSON-able)."""
        answer = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer["result"].get("value")

    async def open(self, url: str, cookies: dict[str, str], ready: str) -> None:
        """Go to ``url`` with the cookies set; wait until the ``ready`` expression is true."""
        for name, value in cookies.items():
            await self.call("Network.setCookie", name=name, value=value, domain="127.0.0.1")
        await self.call("Page.navigate", url=url)
        await self.wait_for(ready, LOAD_TIMEOUT_S)
        await asyncio.sleep(2)  # shown is not yet listening: let the page settle

    async def wait_for(self, condition: str, timeout_s: float) -> None:
        """Until the JavaScript ``condition`` is true; else a screenshot and an error."""
        deadline = time.monotonic() + timeout_s
        while not await self.value(f"!!({condition})"):
            if time.monotonic() > deadline:
                shot = await self.call("Page.captureScreenshot", format="png")
                path = self.profile.parent / "page.png"
                path.write_bytes(base64.b64decode(shot["data"]))
                raise AssertionError(f"the page never showed {condition} (see {path})")
            await asyncio.sleep(0.5)

    async def box(self, element: str) -> list[float]:
        """[left, top, width, height] of an element (scrolled into view)."""
        found = await self.value(
            f"(() => {{ const e = {element}; if (!e) return null; "
            "e.scrollIntoView({block: 'center'}); const b = e.getBoundingClientRect(); "
            "return [b.left, b.top, b.width, b.height]; })()"
        )
        if not found:
            raise AssertionError(f"no element {element}")
        return list(found)

    async def click(self, element: str) -> None:
        """A left click in the middle of the element."""
        left, top, width, height = await self.box(element)
        await self._mouse(left + width / 2, top + height / 2, ("mouseMoved",))
        await self._mouse(left + width / 2, top + height / 2, ("mousePressed", "mouseReleased"))
        await asyncio.sleep(0.3)

    async def drag_over(self, text: str) -> None:
        """Select ``text`` in the labeling area with the mouse, first letter to last."""
        ends = await self.value(
            f"(() => {{ const part = {json.dumps(text)}; const inArea = {IN_AREA}; "
            "const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); "
            "let n; while ((n = walker.nextNode())) { const i = n.textContent.indexOf(part); "
            "if (i < 0 || !inArea(n.parentElement)) continue; "
            "n.parentElement.scrollIntoView({block: 'center'}); "
            "const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + part.length); "
            "const rs = r.getClientRects(); const a = rs[0], z = rs[rs.length - 1]; "
            "return [a.left + 1, a.top + a.height / 2, z.right - 1, z.top + z.height / 2]; } "
            "return null; })()"
        )
        if not ends:
            raise AssertionError(f"no text {text!r} on the page")
        x0, y0, x1, y1 = ends
        await self._mouse(x0, y0, ("mouseMoved", "mousePressed"))
        for step in range(1, 11):
            x, y = x0 + (x1 - x0) * step / 10, y0 + (y1 - y0) * step / 10
            await self.call(
                "Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y, button="left", buttons=1
            )
        await self._mouse(x1, y1, ("mouseReleased",))
        await asyncio.sleep(0.5)

    async def type(self, text: str) -> None:
        """Type into the focused element."""
        await self.call("Input.insertText", text=text)
        await asyncio.sleep(0.3)

    async def _mouse(self, x: float, y: float, kinds: tuple[str, ...]) -> None:
        for kind in kinds:
            await self.call(
                "Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1
            )


def _page_socket(port: int, process: subprocess.Popen[bytes]) -> str:
    """The DevTools websocket of Chromium's first page, once it answers."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=2) as answer:
                targets = json.loads(answer.read())
            return str(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
        except (OSError, StopIteration, ValueError):
            time.sleep(0.2)
    process.kill()
    raise AssertionError("headless Chromium did not answer on its DevTools port")
