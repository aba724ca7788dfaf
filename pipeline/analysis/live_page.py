"""The live page of a store (``rmtsweep serve``): progress and two phase-diagram maps, served by panel.

The page shows ``N / M tasks`` done with a progress bar, the rate and the time left, and two maps drawn as
``rmtsweep plot`` draws them (:mod:`rmtsweep.analysis.map_html`): the detection rate and a variable the
reader chooses, over any two grid axes, the other axes as menus. A periodic callback reads the store's
``done`` flags again every ``interval`` seconds and redraws the maps when they changed. The widgets only
choose what is shown: nothing on the page writes to the store or runs code, and the server has no other
endpoint (no admin page, no notebook, no terminal).
"""

from __future__ import annotations

import dataclasses
import html
import logging
import signal
import socket
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RmtsweepError, UserError
from .live import DETECTION, LiveMap, Progress, Watch, axes, default_axes, live_map, map_variables, plane

if TYPE_CHECKING:
    from .map_style import MapFigure

__all__ = ["INTERVAL", "build_page", "origins", "serve", "url_host"]

INTERVAL = 5.0          # seconds between two readings of the store
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


def _header(store: str, p: Progress | None, interval: float, problem: str = "") -> str:
    """The page's head as HTML: store, the count, the rate and the time left, or why the store cannot be read."""
    title = f"<h2>rmtsweep live: {html.escape(p.sweep if p else '')} <span class='rmt-muted'>{html.escape(store)}" \
            f"</span></h2>"
    read = time.strftime("%H:%M:%S")
    if p is None:
        return f"<div class='rmt-head'>{title}<div class='rmt-note'>{html.escape(problem)}</div></div>"
    share = 100 * p.done / p.total if p.total else 0.0
    if not problem and p.done == 0:
        problem = "no task is done yet: the maps appear as tasks land"
    note = f"<div class='rmt-note'>{html.escape(problem)}</div>" if problem else ""
    return (f"<div class='rmt-head'>{title}<div><span class='rmt-count' id='rmt-count'>{p.count()}</span>"
            f"<span>done ({share:.1f} %), replicates {p.replicates_done} / {p.replicates_total}</span></div>"
            f"<div><b>{html.escape(p.speed())}</b> <span class='rmt-muted'>read at {read}, every {interval:g} s;"
            f" the page is read only</span></div>{note}</div>")


def _figure(fig: MapFigure, width: int, height: int) -> Any:
    """The bokeh figure of a map's ``fig`` (as ``rmtsweep plot`` draws a panel, under the map's whole title)."""
    import holoviews as hv

    from .map_html import _hv_panel
    from .map_static import drawn_transitions
    from .plots import _backends

    panel = dataclasses.replace(fig.panels[0], title=fig.title)
    with _backends():
        import hvplot.xarray  # noqa: F401  (registers .hvplot)
        overlay = _hv_panel(hv, fig, panel, (width, height), drawn_transitions([panel]))
        return hv.render(overlay, backend="bokeh")


def build_page(watch: Watch, interval: float = INTERVAL, label: str = "") -> Any:
    """One browser session's page: widgets, the head and the two maps, and the callback that refreshes them.

    Parameters
    ----------
    watch
        The store being watched (shared by every session, so a new tab knows the rate at once).
    interval
        Seconds between two readings of the store.
    label
        How the head names the store (its path or URL).
    """
    import panel as pn

    from ..store import open_dataset

    ds = open_dataset(watch.path)
    names = axes(ds)
    x0, y0 = default_axes(ds)
    variables = map_variables(ds)
    chosen = next((v for v in ("overlap", "overlap_mean", "lambda1_z") if v in variables), variables[-1])
    x = pn.widgets.Select(name="across", options=names, value=x0, width=110)
    y = pn.widgets.Select(name="up", options=names, value=y0, width=110)
    var = pn.widgets.Select(name="second map", options=variables, value=chosen, width=200)
    fixed = {a: pn.widgets.Select(name=a, options=[str(v) for v in ds[a].values], width=110) for a in names}
    head = pn.pane.HTML(_header(label, None, interval, "reading the store..."), sizing_mode="stretch_width",
                        stylesheets=[CSS])
    bar = pn.indicators.Progress(value=0, max=1, width=1100, height=14, bar_color="success")
    plots = [pn.pane.Bokeh(None) for _ in range(2)]
    texts = [pn.pane.HTML("", stylesheets=[CSS], width=560) for _ in range(2)]
    state: dict[str, Any] = {"digest": None, "ds": ds}

    def show_axes() -> None:
        for a, w in fixed.items():
            w.visible = a not in (x.value, y.value) and len(w.options) > 1

    def redraw(*_: Any) -> None:
        if x.value == y.value:                     # the other one moved: keep two different axes
            y.value = next(a for a in names if a != x.value)
            return
        show_axes()
        at = {a: w.value for a, w in fixed.items()}
        try:
            shown = plane(state["ds"], x.value, y.value, at, load=True)   # one reading for both maps
        except Exception as exc:  # noqa: BLE001 - a store unreachable for a moment: the next reading retries
            for i in range(2):
                plots[i].object, plots[i].visible = None, False
                texts[i].object = f"<div class='rmt-summary'>cannot read the store now: {html.escape(str(exc))}</div>"
            state["digest"] = None
            return
        for i, name in enumerate((DETECTION, var.value)):
            try:
                m = live_map(shown, name, x.value, y.value, at)
                drawn = _figure(m.figure, 420, 300) if m.figure is not None else None
            except Exception as exc:  # noqa: BLE001 - one map that cannot be drawn must not stop the page
                m, drawn = LiveMap(name, None, f"{name}: cannot be drawn ({type(exc).__name__}: {exc})"), None
            plots[i].object, plots[i].visible = drawn, drawn is not None
            texts[i].object = f"<div class='rmt-summary'>{html.escape(m.summary)}</div>"

    def refresh() -> None:
        try:
            p = watch.poll()
            if p.digest != state["digest"]:
                state["ds"] = open_dataset(watch.path)     # opened anew: the chunks written since are read
        except (RmtsweepError, OSError) as exc:        # a store moved away or unreachable: say so, keep trying
            head.object = _header(label, None, interval, f"cannot read the store now: {exc}")
            return
        head.object = _header(label, p, interval)
        bar.max, bar.value = max(p.total, 1), p.done
        if p.digest != state["digest"]:
            state["digest"] = p.digest
            redraw()

    for w in (x, y, var, *fixed.values()):
        w.param.watch(redraw, "value")
    refresh()
    pn.state.add_periodic_callback(refresh, period=int(interval * 1000))
    controls = pn.Row(x, y, *fixed.values(), var)
    maps = pn.Row(*(pn.Column(plots[i], texts[i]) for i in range(2)))
    return pn.Column(head, bar, controls, maps, sizing_mode="stretch_width")


def serve(path: str | Path, host: str = "127.0.0.1", port: int = 5006, interval: float = INTERVAL,
          announce: Callable[[str], None] = print) -> int:
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
        Seconds between two readings of the store.
    announce
        Called once with the page's URL when the server listens.
    """
    import panel as pn

    for name in ("bokeh.server.protocol_handler", "tornado.application", "asyncio"):
        logging.getLogger(name).addFilter(_gone_session)
    watch = Watch(path)
    watch.poll()                                        # a store that cannot be read fails here, in one line
    port = port or _free_port(host)
    label = str(path)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}      # panel sets its own
    try:
        server = pn.serve({"/": lambda: build_page(watch, interval, label)}, port=port, address=host,
                          websocket_origin=origins(host, port), show=False, start=False, threaded=False,
                          title=f"rmtsweep live: {label}", verbose=False, admin=False)
    except OSError as exc:
        raise UserError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); choose "
                        f"another port (--port 0: any free one)") from None
    got: list[int] = []

    def stop(signum: int, frame: Any) -> None:          # the loop stops; the server closes below
        got.append(signum)
        server.io_loop.asyncio_loop.call_soon_threadsafe(server.io_loop.stop)

    for s in before:
        signal.signal(s, stop)
    try:
        server.start()
        announce(f"http://{url_host(host)}:{port}/")
        server.io_loop.start()
    finally:
        server.stop()
        for s, handler in before.items():
            signal.signal(s, handler)
    return got[0] if got else signal.SIGINT
