"""The live page of a store (``rmtsweep serve``): progress and two phase-diagram maps, served by panel.

The page shows ``N / M tasks`` done with a progress bar, the rate and the time left, and two maps drawn as
``rmtsweep plot`` draws them (:mod:`rmtsweep.analysis.maps.interactive`): the detection rate and a variable the
reader chooses, over any two grid axes, the other axes as menus. One background thread reads the store's
``done`` flags every ``interval`` seconds (:class:`rmtsweep.analysis.live_feed.Feed`); every session shows its
latest reading and redraws the maps when they changed, so that readers add no reading of the store. The
widgets only choose what is shown: nothing on the page writes to the store or runs code, and the server has
no other endpoint (no admin page, no notebook, no terminal). It answers only requests that carry the token
of the URL it printed, unless told otherwise.
"""

from __future__ import annotations

import dataclasses
import hmac
import html
import logging
import secrets
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config
from ..errors import UserError
from .live import DETECTION, LiveMap, Progress, Watch
from .live_feed import Feed

if TYPE_CHECKING:
    from .maps.style import MapFigure

__all__ = ["build_page", "origins", "serve", "url_host"]

WILDCARD_HOSTS = ("0.0.0.0", "::", "")
CSS = """
.rmt-head {font-family: "DejaVu Sans", sans-serif; line-height: 1.35}
.rmt-head h2 {margin: 0 0 4px 0; font-size: 18px}
.rmt-count {font-size: 28px; font-weight: bold; margin-right: 14px}
.rmt-muted {color: #555; font-size: 13px}
.rmt-note {color: #8a4b00; font-size: 13px}
.rmt-summary {font-family: "DejaVu Sans", sans-serif; font-size: 12px; color: #333}
"""


def url_host(host: str) -> str:
    """The host a browser reaches the server at: the machine's name for a wildcard address."""
    if host in WILDCARD_HOSTS:
        return socket.getfqdn() or socket.gethostname()
    return f"[{host}]" if ":" in host else host


def origins(host: str, port: int) -> list[str]:
    """The ``Host:port`` values the page's websocket is accepted from: the address served (and its names).

    A page of another site open in the same browser is refused, since its origin is not among them.
    """
    names = {host}
    if host in ("127.0.0.1", "localhost", "::1"):
        names |= {"127.0.0.1", "localhost"}
    if host in WILDCARD_HOSTS:
        names = {"127.0.0.1", "localhost", socket.gethostname(), socket.getfqdn()}
        try:
            names |= {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}   # its address, text
        except OSError:                                     # a host without a resolvable name: its names suffice
            pass
    return sorted(f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names if n)


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _gone_session(record: logging.LogRecord) -> bool:
    """False for the tracebacks of a tab closed or reloaded mid-message: bokeh's about a websocket whose session
    is gone or never came, and tornado's about a page update written to a closed websocket. They say nothing
    about the store or the page; other records pass."""
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    _, exc, tb = record.exc_info or (None, None, None)
    if isinstance(exc, (WebSocketClosedError, StreamClosedError)):
        return False
    if not isinstance(exc, AssertionError) or tb is None:
        return True
    last = traceback.extract_tb(tb)[-1]
    return not (last.name == "session" and last.filename.replace("\\", "/").endswith("bokeh/server/connection.py"))


def _header(store: str, p: Progress | None, interval: float, problem: str = "", read_at: float | None = None) -> str:
    """The page's head as HTML: store, the count, the rate and the time left, whether the theory is pending, and
    why the store cannot be read (the counts are then those of the last reading that could)."""
    title = f"<h2>rmtsweep live: {html.escape(p.sweep if p else '')} <span class='rmt-muted'>{html.escape(store)}" \
            f"</span></h2>"
    read = time.strftime("%H:%M:%S", time.localtime(read_at))
    if p is None:
        return f"<div class='rmt-head'>{title}<div class='rmt-note'>{html.escape(problem)}</div></div>"
    share = 100 * p.done / p.total if p.total else 0.0
    notes = [problem] if problem else []
    if p.theory_pending:
        notes.append("theory at the store's size: pending (a run writes it beside its first tasks); "
                     "the maps that need it appear when it is written")
    if not problem and p.done == 0:
        notes.append("no task is done yet: the maps appear as tasks land")
    note = "".join(f"<div class='rmt-note'>{html.escape(n)}</div>" for n in notes)
    return (f"<div class='rmt-head'>{title}<div><span class='rmt-count' id='rmt-count'>{p.count()}</span>"
            f"<span>done ({share:.1f} %), replicates {p.replicates_done} / {p.replicates_total}</span></div>"
            f"<div><b>{html.escape(p.speed())}</b> <span class='rmt-muted'>read at {read}, every {interval:g} s;"
            f" the page is read only</span></div>{note}</div>")


def _figure(fig: MapFigure, width: int, height: int) -> Any:
    """The bokeh figure of a map's ``fig`` (as ``rmtsweep plot`` draws a panel, under the map's whole title)."""
    import holoviews as hv

    from .maps.interactive import hv_panel
    from .maps.static import drawn_transitions
    from .maps.plot import holoviews_backends

    panel = dataclasses.replace(fig.panels[0], title=fig.title)
    with holoviews_backends():
        import hvplot.xarray  # noqa: F401  (registers .hvplot)
        overlay = hv_panel(hv, fig, panel, (width, height), drawn_transitions([panel]))
        return hv.render(overlay, backend="bokeh")


class Figures:
    """The bokeh figures of the feed's maps, rendered once and copied for each session.

    Holoviews' rendering is most of a page's cost, and a bokeh model belongs to one document: each session gets
    a copy deserialized from the figure rendered for the first (a fifth of a rendering's time).
    """

    KEEP = 64           # figures kept: those of the current reading's selections

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[int, tuple[LiveMap, Any]] = {}

    def figure(self, m: LiveMap) -> Any:
        """A new bokeh figure of ``m`` (which must have a figure), rendered at the first call for it."""
        from bokeh.core.serialization import Deserializer, Serializer

        assert m.figure is not None
        with self._lock:
            got = self._done.get(id(m))
            if got is None or got[0] is not m:                # keyed by identity: the feed keeps a map's object
                if len(self._done) >= self.KEEP:
                    self._done.clear()
                got = self._done[id(m)] = (m, Serializer().serialize(_figure(m.figure, 420, 300)))
        return Deserializer().deserialize(got[1])


def build_page(feed: Feed, interval: float | None = None, label: str = "", figures: Figures | None = None) -> Any:
    """One browser session's page: widgets, the head and the two maps, and the callback that refreshes them.

    The session reads nothing itself: it shows the ``feed``'s latest snapshot and asks it for its maps, so that
    a page costs no reading of the store and no comparison, whatever the number of readers.

    Parameters
    ----------
    feed
        The page's reader of the store, shared by every session.
    interval
        Seconds between two readings of the store (default: the setting ``rmtsweep.serve.interval``).
    label
        How the head names the store (its path or URL).
    figures
        The maps' figures rendered so far, shared by every session.
    """
    import panel as pn

    figures = figures if figures is not None else Figures()
    snap = feed.snapshot
    names = list(snap.names)
    x0, y0 = snap.default
    x = pn.widgets.Select(name="across", options=names, value=x0, width=110)
    y = pn.widgets.Select(name="up", options=names, value=y0, width=110)
    var = pn.widgets.Select(name="second map", options=list(snap.variables), value=snap.second, width=200)
    fixed = {a: pn.widgets.Select(name=a, options=snap.labels[a], width=110) for a in names}
    interval = float(config.get("serve.interval") if interval is None else interval)
    head = pn.pane.HTML(_header(label, None, interval, "reading the store..."), sizing_mode="stretch_width",
                        stylesheets=[CSS])
    bar = pn.indicators.Progress(value=0, max=1, width=1100, height=14, bar_color="success")
    plots = [pn.pane.Bokeh(None) for _ in range(2)]
    texts = [pn.pane.HTML("", stylesheets=[CSS], width=560) for _ in range(2)]
    state: dict[str, Any] = {"serial": None, "key": None, "snap": snap}

    def show_axes() -> None:
        for a, w in fixed.items():
            w.visible = a not in (x.value, y.value) and len(w.options) > 1

    def redraw(*_: Any) -> None:
        if x.value == y.value:                     # the other one moved: keep two different axes
            y.value = next(a for a in names if a != x.value)
            return
        show_axes()
        at = {a: w.value for a, w in fixed.items()}
        for i, m in enumerate(feed.maps(state["snap"], (DETECTION, var.value), x.value, y.value, at)):
            try:
                drawn = figures.figure(m) if m.figure is not None else None
            except Exception as exc:  # noqa: BLE001 - one map that cannot be drawn must not stop the page
                m, drawn = LiveMap(m.var, None, f"{m.var}: cannot be drawn ({type(exc).__name__}: {exc})"), None
            plots[i].object, plots[i].visible = drawn, drawn is not None
            texts[i].object = f"<div class='rmt-summary'>{html.escape(m.summary)}</div>"

    def refresh() -> None:
        snap = feed.snapshot
        if snap.serial == state["serial"]:
            return
        state["serial"], state["snap"] = snap.serial, snap
        head.object = _header(label, snap.progress, interval, snap.problem, snap.read_at)
        if snap.progress is not None:
            bar.max, bar.value = max(snap.progress.total, 1), snap.progress.done
        if snap.key != state["key"]:
            state["key"] = snap.key
            if list(var.options) != list(snap.variables):       # the theory landed: its variables join the menu
                var.options = list(snap.variables)
            redraw()

    for w in (x, y, var, *fixed.values()):
        w.param.watch(redraw, "value")
    refresh()
    # a session only looks at the feed's snapshot: cheap, so it looks twice an interval
    pn.state.add_periodic_callback(refresh, period=max(250, int(interval * 500)))
    controls = pn.Row(x, y, *fixed.values(), var)
    maps = pn.Row(*(pn.Column(plots[i], texts[i]) for i in range(2)))
    return pn.Column(head, bar, controls, maps, sizing_mode="stretch_width")


class _TokenAuth:
    """Who may see the page: a request whose ``token`` argument or cookie is the server's token.

    A bokeh ``AuthProvider`` (made by :func:`_token_auth`, so that bokeh is imported only when serving): the page,
    its session and its websocket answer 403 to a request without it. The page's URL carries the token; the
    first request with it sets a cookie, so that the page's websocket and a reload need no argument.
    """

    def __init__(self, token: str, cookie: str) -> None:
        self.token, self.cookie = token.encode(), cookie

    def user(self, handler: Any) -> str | None:
        """``"owner"`` for a request with the token, ``None`` for any other (tornado then calls :meth:`refuse`)."""
        given = handler.get_argument("token", None)
        if given is not None and hmac.compare_digest(given.encode(), self.token):
            if not hasattr(handler, "ws_connection"):              # a websocket's upgrade sets no cookie
                handler.set_cookie(self.cookie, self.token.decode(), httponly=True, samesite="Strict")
            return "owner"
        kept = handler.get_cookie(self.cookie)
        return "owner" if kept is not None and hmac.compare_digest(kept.encode(), self.token) else None

    def refuse(self, handler: Any) -> str:
        """Tornado asks where to log in: nowhere, the request is refused."""
        from tornado.web import HTTPError
        raise HTTPError(403, "this page needs the token of the URL that rmtsweep serve printed")


def _token_auth(token: str, port: int) -> Any:
    """A bokeh ``AuthProvider`` that lets in only requests with ``token`` (:class:`_TokenAuth`)."""
    from bokeh.server.auth_provider import AuthProvider

    check = _TokenAuth(token, f"rmtsweep-live-{port}")            # a cookie per port: two pages, two tokens

    class TokenAuth(AuthProvider):
        @property
        def get_user(self) -> Any:
            return check.user

        @property
        def get_login_url(self) -> Any:
            return check.refuse

    return TokenAuth()


def serve(path: str | Path, host: str = "127.0.0.1", port: int = 5006, interval: float | None = None,
          announce: Callable[[str], None] = print, token: bool = True,
          say: Callable[[str], None] = lambda line: None) -> int:
    """Serve the live page of the store at ``path`` until SIGINT or SIGTERM; returns that signal's number.

    Parameters
    ----------
    path
        A store's path, or a located URL of object storage.
    host
        The address to listen on (``127.0.0.1``: this machine only; ``0.0.0.0``: every interface).
    port
        The port; 0 for any free one.
    interval
        Seconds between two readings of the store (default: the setting ``rmtsweep.serve.interval``).
    announce
        Called once with the page's URL when the server listens.
    token
        Serve only requests that carry a random token, which the URL announced holds (as Jupyter does); without
        it, any user who can reach the port sees the page.
    say
        Called with one line when the store cannot be read any more, and when it can again.
    """
    import panel as pn

    from ..errors import StoreError

    for name in ("bokeh.server.protocol_handler", "tornado.application", "asyncio"):
        logging.getLogger(name).addFilter(_gone_session)
    label = str(path)
    stop_reading = threading.Event()
    # a reading cut short by the server's end is no news: nothing is said once it ends
    interval = float(config.get("serve.interval") if interval is None else interval)
    feed = Feed(Watch(path), label, lambda line: None if stop_reading.is_set() else say(line))
    try:
        feed.read(strict=True)                           # a store that cannot be read fails here, in one line
    except OSError as exc:
        raise StoreError(f"{label}: cannot read it ({exc.strerror or exc})") from None
    port = port or _free_port(host)
    secret = secrets.token_urlsafe(32) if token else ""
    auth = {"auth_provider": _token_auth(secret, port)} if token else {}
    figures = Figures()
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}      # panel sets its own
    try:
        server = pn.serve({"/": lambda: build_page(feed, interval, label, figures)}, port=port, address=host,
                          websocket_origin=origins(host, port), show=False, start=False, threaded=False,
                          title=f"rmtsweep live: {label}", verbose=False, admin=False, **auth)
    except OSError as exc:
        raise UserError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); choose "
                        f"another port (--port 0: any free one)") from None
    got: list[int] = []
    reader = threading.Thread(target=feed.run, args=(interval, stop_reading), name="rmtsweep-live-reader",
                              daemon=True)

    def stop(signum: int, frame: Any) -> None:          # the loop stops; the server closes below
        got.append(signum)
        server.io_loop.asyncio_loop.call_soon_threadsafe(server.io_loop.stop)

    for s in before:
        signal.signal(s, stop)
    try:
        server.start()
        reader.start()
        announce(f"http://{url_host(host)}:{port}/" + (f"?token={secret}" if token else ""))
        server.io_loop.start()
    finally:
        stop_reading.set()
        if reader.is_alive():
            reader.join(timeout=30)                     # a reading under way ends before the interpreter does
        server.stop()
        for s, handler in before.items():
            signal.signal(s, handler)
    return got[0] if got else signal.SIGINT
