"""Known SVG attacks, sanitised, opened in Chromium as documents: nothing runs, nothing loads.

Each payload, if it works, either runs script (which sets `window.__pwned`) or fetches a URL
on a loopback server the test runs (which counts the hit). The sanitised SVG is served as a
top-level `image/svg+xml` document, the most dangerous way to open it, then given time to
animate and hovered, clicked and focused everywhere. As a control, the same listener must
catch the raw (unsanitised) payloads that are known to work: without that, a clean result
would prove nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_core.errors import ToolError
from agent_core.tools.image import sanitize_svg

from .conftest import CHROMIUM_ARGS

NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
JS = "top.__pwned=1;fetch('{hit}')"
DOT = '<circle cx="10" cy="10" r="8" fill="red"/>'

# (name, payload): {hit} is a URL on the counting server, {js} script that reports itself.
PAYLOADS: list[tuple[str, str]] = [
    ("script", f"<svg {NS}><script>{{js}}</script>{DOT}</svg>"),
    ("script-cdata", f"<svg {NS}><script><![CDATA[{{js}}]]></script>{DOT}</svg>"),
    ("script-src", f'<svg {NS}><script href="{{hit}}"/>{DOT}</svg>'),
    ("script-xlink-src", f'<svg {NS}><script xlink:href="{{hit}}"/>{DOT}</svg>'),
    ("svg-onload", f'<svg {NS} onload="{{js}}">{DOT}</svg>'),
    (
        "circle-onmouseover",
        f'<svg {NS}><circle r="50" cx="50" cy="50" onmouseover="{{js}}"/></svg>',
    ),
    ("circle-onclick", f'<svg {NS}><circle r="50" cx="50" cy="50" onclick="{{js}}"/></svg>'),
    (
        "animate-onbegin",
        f'<svg {NS}>{DOT}<animate attributeName="x" dur="1s" onbegin="{{js}}"/></svg>',
    ),
    (
        "set-onend",
        f'<svg {NS}>{DOT}<set attributeName="x" to="1" dur="0.1s" onend="{{js}}"/></svg>',
    ),
    (
        "set-href-javascript",
        f'<svg {NS}><a><set attributeName="href" to="javascript:{{js}}"/>'
        f'<rect width="100" height="100"/></a></svg>',
    ),
    (
        "animate-href-javascript",
        f'<svg {NS}><a><animate attributeName="href" values="javascript:{{js}}"/>'
        f'<rect width="100" height="100"/></a></svg>',
    ),
    (
        "a-href-javascript",
        f'<svg {NS}><a href="javascript:{{js}}"><rect width="100" height="100"/></a></svg>',
    ),
    (
        "a-xlink-javascript",
        f'<svg {NS}><a xlink:href="javascript:{{js}}"><rect width="100" height="100"/></a></svg>',
    ),
    ("image-href", f'<svg {NS}><image href="{{hit}}" width="10" height="10"/>{DOT}</svg>'),
    ("image-xlink", f'<svg {NS}><image xlink:href="{{hit}}" width="10" height="10"/>{DOT}</svg>'),
    ("image-onerror", f'<svg {NS}><image href="x:" onerror="{{js}}"/>{DOT}</svg>'),
    ("use-external", f'<svg {NS}><use href="{{hit}}#x"/>{DOT}</svg>'),
    ("use-data", f"<svg {NS}><use href=\"data:image/svg+xml,&lt;svg id='x'/&gt;#x\"/>{DOT}</svg>"),
    ("feimage", f'<svg {NS}><filter id="f"><feImage href="{{hit}}"/></filter>{DOT}</svg>'),
    ("style-import", f"<svg {NS}><style>@import url({{hit}});</style>{DOT}</svg>"),
    (
        "style-background",
        f"<svg {NS}><style>circle {{{{ fill: url({{hit}}#p) }}}}</style>{DOT}</svg>",
    ),
    ("style-attr-fill-url", f'<svg {NS}><circle r="8" style="fill:url({{hit}}#g)"/></svg>'),
    ("fill-attr-url", f'<svg {NS}><circle r="8" fill="url({{hit}}#g)"/></svg>'),
    ("filter-attr-url", f'<svg {NS}><circle r="8" filter="url({{hit}}#f)"/></svg>'),
    ("mask-attr-url", f'<svg {NS}><circle r="8" mask="url({{hit}}#m)"/></svg>'),
    (
        "foreignobject-img",
        f'<svg {NS}><foreignObject width="10" height="10"><img xmlns="http://www.w3.org/1999/'
        f'xhtml" src="{{hit}}"/></foreignObject>{DOT}</svg>',
    ),
    (
        "foreignobject-iframe",
        f'<svg {NS}><foreignObject width="10" height="10"><iframe xmlns="http://www.w3.org/'
        f'1999/xhtml" src="{{hit}}"/></foreignObject>{DOT}</svg>',
    ),
    (
        "foreignobject-script",
        f'<svg {NS}><foreignObject><script xmlns="http://www.w3.org/1999/xhtml">{{js}}'
        f"</script></foreignObject>{DOT}</svg>",
    ),
    ("handler", f'<svg {NS}><handler type="text/ecmascript">{{js}}</handler>{DOT}</svg>'),
    (
        "html-namespace-script",
        f'<svg {NS} xmlns:h="http://www.w3.org/1999/xhtml"><h:script>{{js}}</h:script>{DOT}</svg>',
    ),
    ("mixed-case-script", f"<svg {NS}><ScRiPt>{{js}}</ScRiPt>{DOT}</svg>"),
    ("iframe-srcdoc", f'<svg {NS}><iframe srcdoc="&lt;img src={{hit}}&gt;"/>{DOT}</svg>'),
    ("cursor-url", f'<svg {NS}><circle r="50" cx="50" cy="50" cursor="url({{hit}}), auto"/></svg>'),
    ("tref", f'<svg {NS}><text><tref href="{{hit}}#t"/></text>{DOT}</svg>'),
    (
        "stylesheet-pi",
        f'<?xml-stylesheet href="{{hit}}" type="text/css"?><svg {NS}>{DOT}</svg>',
    ),
    (
        "discard-onbegin",
        f'<svg {NS}>{DOT}<discard begin="0s" onbegin="{{js}}"/></svg>',
    ),
]

# Raw payloads Chromium acts on (29 of these 36 did in Chromium 150; those that need an
# animation's timing are left out of the control): the listener must catch each.
KNOWN_LIVE = {
    "a-href-javascript",
    "a-xlink-javascript",
    "circle-onclick",
    "circle-onmouseover",
    "cursor-url",
    "feimage",
    "fill-attr-url",
    "filter-attr-url",
    "foreignobject-iframe",
    "foreignobject-img",
    "foreignobject-script",
    "html-namespace-script",
    "image-href",
    "image-onerror",
    "image-xlink",
    "mask-attr-url",
    "script",
    "script-cdata",
    "script-src",
    "script-xlink-src",
    "style-attr-fill-url",
    "style-import",
    "stylesheet-pi",
    "svg-onload",
    "use-external",
}


class _Target(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.documents: dict[str, bytes] = {}
        self.hits: list[str] = []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Target

    def do_GET(self) -> None:
        if self.path.startswith("/doc/"):
            body = self.server.documents.get(self.path.removeprefix("/doc/"), b"")
            self._send(200, "image/svg+xml", body)
            return
        if self.path.startswith("/hit/"):  # Not the browser's own /favicon.ico.
            self.server.hits.append(self.path)
        self._send(200, "text/css", b"")

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # Quiet.
        pass


@pytest.fixture(scope="module")
def target() -> Iterator[_Target]:
    server = _Target()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def browser_page(chromium_path: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 200, "height": 200})
        yield page
        browser.close()


def _filled(payload: str, hit: str) -> str:
    return payload.replace("{js}", JS.replace("{hit}", hit)).replace("{hit}", hit)


def _provoke(page) -> None:
    """Give animations time, then hover, click and focus every element."""
    page.wait_for_timeout(400)
    for x, y in ((10, 10), (50, 50)):
        page.mouse.move(x, y)
        page.mouse.click(x, y)
    page.evaluate(
        """() => { for (const e of document.querySelectorAll('*')) {
            for (const t of ['mouseover', 'click', 'focusin', 'activate']) {
                e.dispatchEvent(new Event(t, {bubbles: true}));
            }
            if (e.focus) e.focus();
        } }"""
    )
    page.wait_for_timeout(300)


def _open(page, target: _Target, name: str, svg: str) -> tuple[bool, list[str]]:
    """Open `svg` as a document; whether script ran and which requests it made."""
    requests: list[str] = []
    listener = lambda request: requests.append(request.url)  # noqa: E731
    page.on("request", listener)
    page.on("dialog", lambda dialog: dialog.dismiss())
    target.documents[name] = svg.encode()
    try:
        page.goto(f"{target.base}/doc/{name}", wait_until="load")
        _provoke(page)
        ran = bool(page.evaluate("() => window.__pwned === 1"))
    finally:
        page.remove_listener("request", listener)
    document = f"{target.base}/doc/{name}"
    return ran, [url for url in requests if url != document]


def test_no_sanitised_payload_runs_script_or_loads_anything(target, browser_page):
    caught: dict[str, object] = {}
    for name, payload in PAYLOADS:
        hit = f"{target.base}/hit/{name}"
        try:
            svg = sanitize_svg(_filled(payload, hit))
        except ToolError:
            continue  # Refused outright: nothing to render.
        before = len(target.hits)
        ran, requests = _open(browser_page, target, f"clean-{name}", svg)
        if ran or requests or len(target.hits) > before:
            caught[name] = {"script": ran, "requests": requests, "svg": svg}
    assert caught == {}


def test_the_listener_catches_the_raw_payloads_that_chromium_runs(target, browser_page):
    live = set()
    for name, payload in PAYLOADS:
        if name not in KNOWN_LIVE:
            continue
        hit = f"{target.base}/hit/raw-{name}"
        before = len(target.hits)
        ran, requests = _open(browser_page, target, f"raw-{name}", _filled(payload, hit))
        if ran or requests or len(target.hits) > before:
            live.add(name)
    assert live == KNOWN_LIVE


def test_a_sanitised_drawing_still_draws(target, browser_page):
    svg = sanitize_svg(f'<svg {NS} width="100" height="100">{DOT}</svg>')
    target.documents["benign"] = svg.encode()
    browser_page.goto(f"{target.base}/doc/benign")
    assert browser_page.locator("circle").get_attribute("fill") == "red"
