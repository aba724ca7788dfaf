"""``serve``: a live page of a store, read only, refreshed as tasks land.

Heavy modules (panel, bokeh, the analysis) are imported inside the command, so that ``--help`` answers at once.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from ._group import STORE_LOCATION, cli, storage_options

__all__ = ["serve"]


@cli.command()
@click.argument("store_path", metavar="STORE", type=STORE_LOCATION)
@storage_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on: 127.0.0.1 is this machine only (reach it from elsewhere through "
                   "ssh -L); 0.0.0.0 every interface, for anyone who can reach this machine.")
@click.option("--port", type=click.IntRange(0, 65535), default=5006, show_default=True,
              help="Port to listen on; 0: any free one.")
@click.option("--interval", type=click.FloatRange(min=0.5), default=None, metavar="SECONDS",
              help="How often the page reads the store again (default: rmtsweep.serve.interval, 5 s).")
@click.option("--no-token", "no_token", is_flag=True,
              help="Serve the page to anyone who can reach the port, without the URL's token: unsafe on a shared "
                   "machine, where every user reaches 127.0.0.1.")
def serve(store_path: Path, host: str, port: int, interval: float | None, no_token: bool) -> None:
    """Serve a live page of STORE: tasks done, rate and time left, and the maps of the detection rate and a
    chosen variable over any two axes, redrawn as tasks land. The page cannot change the store; Ctrl-C stops.

    The URL printed holds a random token (as Jupyter's does): a request without it is refused (403), so that
    other users of the machine cannot read the store through the page."""
    from .. import store
    from ..analysis.live_page import serve as serve_page
    from ..errors import StoreError

    problem = store.store_problem(store_path)
    if problem:
        raise StoreError(f"{store_path}: {problem}")
    if no_token:
        click.echo("rmtsweep: --no-token: anyone who can reach the port can read this page, every user of this "
                   "machine included", err=True)
    try:
        signum = serve_page(store_path, host, port, interval,
                            announce=lambda url: click.echo(f"serving {store_path} at {url} (read only; Ctrl-C stops)"),
                            token=not no_token, say=lambda line: click.echo(f"rmtsweep: {line}", err=True))
    except KeyboardInterrupt:                   # before the server listened (its own handler takes it after)
        signum = signal.SIGINT
    # Ctrl-C is how this command ends: one line and the status of an interrupt, not main's words about resuming.
    if signum == signal.SIGTERM:
        click.echo("rmtsweep: stopped by SIGTERM; the page is closed", err=True)
        sys.exit(143)
    click.echo("rmtsweep: interrupted; the page is closed", err=True)
    sys.exit(130)
