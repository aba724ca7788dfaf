"""What answers at a ``--scheduler`` address: a dask scheduler, or one line that says what is wrong instead.

A client's own handshake with something that never answers (a web server, the dashboard's port) waits for ever,
so the address is probed first, within the settings ``rmtsweep.scheduler.connect-timeout`` and
``probe-timeout``: a port, a known scheme and host, something listening, TLS where it says tls://, and a dask
server that says it is a scheduler.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ClusterError

__all__ = ["check_address", "reason", "scheduler_client"]


@contextmanager
def scheduler_client(address: str, security: Any = None) -> Iterator:
    """A client of the scheduler at ``address``; a :class:`ClusterError` naming it and what is wrong if none.

    ``security``: a ``distributed.Security`` (``--security FILE``); None takes dask's configuration.
    """
    from distributed import Client

    from ..config import get
    check_address(address, security)
    try:
        client = Client(address, timeout=f"{float(get('scheduler.connect-timeout'))}s", security=security)
    except Exception as exc:  # noqa: BLE001 - whatever stops the connection is the one line to print
        raise ClusterError(f"--scheduler {address}: cannot connect: {reason(exc)}") from None
    with client:
        yield client


def check_address(address: str, security: Any = None) -> None:
    """One line, within ``rmtsweep.scheduler.connect-timeout`` seconds, on an address that has no port, an unknown
    scheme or host, nothing listening, no TLS where it says tls://, or something other than a dask scheduler answering.

    The last is asked for the scheduler's identity here, under a deadline: a client whose handshake meets
    something that never answers (a web server, the dashboard's port) would wait for ever.
    """
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend
    from distributed.security import Security

    from ..config import get
    timeout, probe = float(get("scheduler.connect-timeout")), float(get("scheduler.probe-timeout"))
    where, deadline = f"--scheduler {address}", time.monotonic() + timeout
    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
    except ValueError as exc:
        raise ClusterError(f"{where}: {exc}; give one such as tcp://host:8786") from None
    if scheme not in ("tcp", "tls"):
        return
    try:
        host, port = parse_host_port(location)
    except ValueError:
        raise ClusterError(f"{where}: no port; give one, e.g. {scheme}://{location}:8786") from None
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ClusterError(f"{where}: unknown host {host!r} ({getattr(exc, 'strerror', None) or exc})") from None
    security = (security or Security()).get_connection_args("client")
    context = security.get("ssl_context")
    if scheme == "tls" and context is None:
        raise ClusterError(f"{where}: tls:// needs the client's TLS certificates: --security FILE, or the dask "
                           "config (distributed.comm.tls.ca-file, .client.cert, .client.key); or use tcp://")
    try:
        with socket.create_connection((host, port), timeout=probe) as sock:
            _hears_a_handshake(sock, context if scheme == "tls" else None, host, where, probe)
    except ConnectionRefusedError:
        raise ClusterError(f"{where}: nothing listens on {host}:{port} (connection refused)") from None
    except OSError:
        pass            # unreachable, or slow: the identity below tries until the deadline and says why
    try:
        left = max(1.0, deadline - time.monotonic())
        kind = asyncio.run(asyncio.wait_for(_identity(address, security, left), left))
    except TimeoutError:
        raise ClusterError(f"{where}: no dask scheduler answered within {timeout:g} s (a scheduler listens "
                           "on 8786 unless told otherwise; 8787 is its dashboard)") from None
    except OSError as exc:
        raise ClusterError(f"{where}: cannot connect: {reason(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - garbage from something that is not dask
        raise ClusterError(f"{where}: what answers there is not a dask scheduler ({reason(exc)})") from None
    if kind != "Scheduler":
        raise ClusterError(f"{where}: that is a dask {kind}, not a scheduler")


async def _identity(address: str, security: dict, timeout: float) -> str:
    """The ``type`` a dask server at ``address`` says it is (``Scheduler``, ``Worker``, ``Nanny``)."""
    from distributed.comm import connect

    comm = await connect(address, timeout=timeout, **security)
    try:
        await comm.write({"op": "identity", "reply": True})
        reply = await comm.read()
    finally:
        comm.abort()
    return reply.get("type", "server") if isinstance(reply, dict) else "server"


def _hears_a_handshake(sock: socket.socket, context: Any, host: str, where: str, probe: float) -> None:
    """A dask server speaks first: its handshake comes as soon as the connection (and TLS) is up (``probe``
    seconds at most)."""
    tls = context is not None
    if tls:
        try:
            sock = context.wrap_socket(sock, server_hostname=host if context.check_hostname else None)
        except TimeoutError:
            raise ClusterError(f"{where}: no answer to a TLS handshake within {probe:g} s: is it a "
                               "tcp:// scheduler?") from None
        except ssl.SSLError as exc:
            raise ClusterError(f"{where}: TLS handshake failed ({exc.reason or exc}): is it a tcp:// scheduler, "
                               "or one with other certificates?") from None
    try:
        first = sock.recv(1)
    except TimeoutError:
        hint = "" if tls else ", or one that wants tls://"
        raise ClusterError(f"{where}: no dask handshake within {probe:g} s: is it a scheduler's port (8786 "
                           f"unless told otherwise; 8787 is its dashboard){hint}?") from None
    except ConnectionError as exc:
        first, reason = b"", f" ({exc.strerror or exc})"
    else:
        reason = ""
    if not first:
        raise ClusterError(f"{where}: the connection was closed{reason} before a dask handshake: is it a "
                           f"scheduler{' that speaks TLS' if tls else ''}?")


def reason(exc: BaseException) -> str:
    """An exception and its innermost cause, in one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    inner = exc
    while (deeper := inner.__cause__ or inner.__context__) is not None:
        inner = deeper
    if inner is not exc:
        cause = " ".join(str(inner).split()) or type(inner).__name__
        if cause not in text:
            text += f" ({cause})"
    return text
