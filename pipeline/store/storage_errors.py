"""What a failure of a storage service means for the user, in one line naming the store (:func:`storage_error`).

A mistake the user can fix (no or wrong credentials, a bucket that does not exist or cannot, an option the
filesystem does not take) is a :class:`~rmtsweep.errors.StoreError`; a service that does not answer is a
:class:`~rmtsweep.errors.StorageUnavailableError`. Exceptions are known by name: none of botocore, aiohttp or the
storage SDKs is imported.
"""

from __future__ import annotations

import re

from ..errors import RmtsweepError, StorageUnavailableError, StoreError, UserError

__all__ = ["OUTAGE", "first_line", "storage_error"]

# Names of the exceptions of botocore, aiohttp and the storage SDKs, so that none of them need be imported.
_NO_CREDENTIALS = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError", "NoAuthTokenError",
                   "DefaultCredentialsError", "ClientAuthenticationError"}
_INVALID = {"ParamValidationError", "InvalidBucketName"}
OUTAGE = {"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
           "ClientConnectorError", "ServerDisconnectedError", "ClientOSError", "ServiceUnavailable", "SlowDown"}
_KEYWORD = re.compile(r"unexpected keyword argument '([^']+)'")


def first_line(exc: BaseException) -> str:
    """``exc``'s type and the first line of its words (at most 160 characters), for a one-line error."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


def storage_error(exc: BaseException, url: str) -> RmtsweepError | None:
    """The one-line error for a failure of the storage behind ``url``, or ``None`` if ``exc`` is not one.

    No, or wrong, credentials, a bucket that does not exist or whose name the service refuses, and an option the
    filesystem does not take are the user's to fix (:class:`~rmtsweep.errors.StoreError` or
    :class:`~rmtsweep.errors.UserError`, exit status 2); a service that does not answer is an outage
    (:class:`~rmtsweep.errors.StorageUnavailableError`, exit status 1). An :class:`~rmtsweep.errors.RmtsweepError`
    is returned as it is.

    Examples
    --------
    >>> print(storage_error(FileNotFoundError("The specified bucket does not exist"), "s3://nobucket/run.zarr"))
    s3://nobucket/run.zarr: the bucket nobucket does not exist; create it, or correct the URL
    >>> storage_error(ValueError("not a storage failure"), "s3://b/run.zarr") is None
    True
    """
    if isinstance(exc, RmtsweepError):
        return exc
    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    text = " ".join(str(e) for e in chain)
    protocol, _, rest = url.partition("://")
    bucket = rest.split("/", 1)[0]
    if names & _NO_CREDENTIALS:
        where = (" (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, in the environment; or "
                 "--storage-option key=... --storage-option secret=...)") if protocol in ("s3", "s3a") else ""
        return StoreError(f"{url}: no credentials for {protocol}:// were found{where}")
    if names & _INVALID or "Invalid bucket name" in text:
        rule = " (3 to 63 lowercase letters, digits, dots and hyphens)" if protocol in ("s3", "s3a") else ""
        return StoreError(f"{url}: {bucket!r} is not a valid bucket name{rule}")
    if "NoSuchBucket" in names or any(isinstance(e, FileNotFoundError) and "bucket" in str(e).lower() for e in chain):
        return StoreError(f"{url}: the bucket {bucket} does not exist; create it, or correct the URL")
    if any(isinstance(e, PermissionError) for e in chain):
        return StoreError(f"{url}: access denied ({_first_line(exc)}); check the credentials and what they may "
                          f"access")
    if any(isinstance(e, TypeError) for e in chain) and (m := _KEYWORD.search(text)):
        return UserError(f"{url}: {protocol}:// does not take the storage option {m[1]!r} (--storage-option)")
    if names & OUTAGE or any(isinstance(e, (ConnectionError, TimeoutError)) for e in chain):
        return StorageUnavailableError(f"{url}: the storage does not answer ({_first_line(exc)}); rerun the same "
                                       f"command once it answers")
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during (each once)."""
    found: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in found and len(found) < 8:
        found.append(e)
        e = e.__cause__ or e.__context__
    return found


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__
