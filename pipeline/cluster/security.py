"""Who may use a run's scheduler: temporary TLS credentials for the clusters rmtsweep starts, a file for those it joins.

dask runs whatever a connected client sends, so a scheduler that listens on a cluster's network in
the clear lets anyone on that network run code as its owner. rmtsweep therefore secures every
scheduler it starts beyond loopback (``--cluster slurm|pbs``, and the driver job of ``rmtsweep
submit``) with mutual TLS:

- :func:`temporary_credentials` makes a self-signed certificate and key for this run only
  (``distributed.Security.temporary``) and writes them into a new directory that only the owner can
  read (mode 0700, files 0600), on a filesystem the worker jobs share; the worker job scripts name
  those files (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``), so the credentials never appear on a
  command line or in a job's environment. The directory is removed when the run ends, also on Ctrl-C
  or SIGTERM; nothing is left in the user's home or the store.
- A client without that certificate is refused by the scheduler (and by every worker).
- :func:`load_security` reads the credentials of a scheduler started elsewhere (``--security FILE``).
- :func:`exposure_warning` names a ``tcp://`` address that others on the network can reach.

The embedded LocalCluster is secured the same way, with credentials held in memory
(:func:`rmtsweep.cluster.engine.connect`): every user of a shared node reaches loopback.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator
from urllib.parse import urlsplit

import yaml

from ..errors import ClusterError

__all__ = ["CREDENTIALS_PREFIX", "Credentials", "credentials_parent", "exposure_warning", "load_security",
           "temporary_credentials"]

CREDENTIALS_PREFIX = ".rmtsweep-tls-"


@dataclass(frozen=True)
class Credentials:
    """One run's TLS files: a CA (the self-signed certificate itself), the certificate and its key."""

    directory: Path
    ca_file: Path
    cert: Path
    key: Path

    def security(self):
        """A ``distributed.Security`` for every role (scheduler, workers, clients), encryption required."""
        from distributed.security import Security
        files = {"tls_ca_file": str(self.ca_file)}
        for role in ("client", "scheduler", "worker"):
            files[f"tls_{role}_cert"] = str(self.cert)
            files[f"tls_{role}_key"] = str(self.key)
        return Security(require_encryption=True, **files)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def credentials_parent(kind: str, configured: str | None = None) -> Path:
    """Where a run's credentials directory goes: ``credentials_directory`` of the cluster config, else
    dask-jobqueue's ``jobqueue.<kind>.shared-temp-directory``, else the current directory (where the
    worker jobs are submitted from, so on a filesystem they share)."""
    import dask
    chosen = configured or dask.config.get(f"jobqueue.{kind}.shared-temp-directory", None)
    return Path(os.path.expandvars(chosen)).expanduser() if chosen else Path.cwd()


@contextmanager
def temporary_credentials(parent: str | Path) -> Iterator[Credentials]:
    """Credentials made for one run, in a private directory under ``parent``, removed afterwards.

    ``parent`` must be on a filesystem the worker jobs see (they read the files at start-up).

    Raises
    ------
    ClusterError
        ``parent`` cannot hold the directory, or ``cryptography`` is missing.
    """
    from distributed.security import Security
    try:
        made = Security.temporary()
    except ImportError as exc:
        raise ClusterError(f"cannot make the run's TLS credentials: {exc}; or pass --insecure") from None
    parent = Path(parent).expanduser()
    try:
        directory = Path(tempfile.mkdtemp(prefix=CREDENTIALS_PREFIX, dir=parent))    # mode 0700
    except OSError as exc:
        raise ClusterError(f"{parent}: cannot write the run's TLS credentials there ({exc.strerror or exc}); "
                           f"set credentials_directory in the cluster config, or pass --insecure") from None
    try:
        creds = Credentials(directory, directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
        _write_private(creds.ca_file, made.tls_ca_file)
        _write_private(creds.cert, made.tls_client_cert)
        _write_private(creds.key, made.tls_client_key)
        yield creds
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def load_security(path: str | Path):
    """The ``distributed.Security`` described by a YAML file with ``ca_file``, ``cert`` and ``key``.

    Relative paths are taken from the file's directory. Example file::

        ca_file: ca.pem      # the certificate authority that signed the scheduler's and workers' certificates
        cert: client.pem     # this client's certificate ...
        key: client-key.pem  # ... and its private key (may be the same file as cert)

    Raises
    ------
    ClusterError
        The file cannot be read, lacks a field, or names a file that does not exist.
    """
    from distributed.security import Security
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ClusterError(f"--security {path}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ClusterError(f"--security {path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ClusterError(f"--security {path}: expected a mapping with ca_file, cert and key")
    files = {}
    for field in ("ca_file", "cert", "key"):
        if not isinstance(data.get(field), str):
            raise ClusterError(f"--security {path}: field `{field}` is missing (a path to a PEM file)")
        file = (path.parent / data[field]).expanduser()
        if not file.is_file():
            raise ClusterError(f"--security {path}: field `{field}`: {file} does not exist")
        files[field] = str(file)
    unknown = sorted(set(data) - {"ca_file", "cert", "key"})
    if unknown:
        raise ClusterError(f"--security {path}: unknown field(s) {unknown}; expected ca_file, cert and key")
    return Security(require_encryption=True, tls_ca_file=files["ca_file"], tls_client_cert=files["cert"],
                    tls_client_key=files["key"])


def _loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback
                       for info in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return False


def exposure_warning(address: str) -> str | None:
    """A one-line warning when ``address`` is an unencrypted scheduler that others on the network can reach."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme != "tcp" or _loopback(parts.hostname or ""):
        return None
    return (f"warning: --scheduler {address} is unencrypted and reachable from the network: anyone who can "
            f"reach it can run code as you; start it with TLS and pass tls://... with --security FILE")
