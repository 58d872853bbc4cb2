"""Remote files read front to back through fsspec: http(s), s3://, gs://, hf://, memory:// and any other
protocol fsspec knows open the same way.

A transient failure (an answer of status 5xx, 408 or 429, a dropped connection, a timeout) is retried:
the open after a wait of `RETRY_WAIT_S`, doubled at each further failure, for `ATTEMPTS` tries in all;
a stream that breaks mid-read is reopened where it broke (a seek, or, for a stream that cannot seek
such as an http response, the bytes before read again and dropped) under the same count, which starts
again once a read gets through. A missing file or a refused access is not retried. A protocol whose
package is not installed (s3fs, gcsfs, aiohttp for http) is one line naming what to install.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from typing import IO, TYPE_CHECKING, Any

from vision_bench.errors import DataError, first_line

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

URL_MARK = "://"
ATTEMPTS = 4
RETRY_WAIT_S = 1.0
"""The wait before the first retry; each further one waits twice as long (1, 2, 4 s)."""
HTTP_TIMEOUT_S = 60
"""How long an http connection may wait to connect, or between two reads, before the try fails."""
PACKAGES = {
    "http": "aiohttp", "https": "aiohttp", "s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs",
    "hf": "huggingface_hub", "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs",
}
"""The package each protocol needs beyond fsspec, named in the error when it is missing."""
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_PERMANENT = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
_RETRIED_STATUS = (408, 429)
_SKIP_CHUNK = 1 << 20


def url_protocol(text: str) -> str | None:
    """The protocol of a URL (`s3` of `s3://bucket/key`); None for a local path or a `file://` URL."""
    match = _URL.match(text)
    name = match.group(1).lower() if match else None
    return None if name == "file" else name


def is_url(text: str) -> bool:
    return url_protocol(text) is not None


def filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec file system of `url` and the path within it; a missing package or an unknown protocol is
    one line."""
    import fsspec

    protocol = url_protocol(url)
    if protocol is None:
        raise DataError(f"{url}: not a URL; give a protocol such as https://, s3:// or gs://")
    try:
        fsspec.get_filesystem_class(protocol)
        return fsspec.core.url_to_fs(url, **_options(protocol))
    except ImportError as error:
        package = PACKAGES.get(protocol)
        fix = f"pip install {package}" if package else f"install what fsspec asks for ({first_line(error)})"
        raise DataError(f"{url}: reading {protocol}:// URLs needs the {package or 'missing'} package; {fix}") from None
    except ValueError:
        raise DataError(f"{url}: {protocol}:// is not a protocol fsspec knows; check the address, or copy the "
                        "files here") from None


def _options(protocol: str) -> dict[str, Any]:
    """Storage options: for http(s) a connect and read timeout instead of aiohttp's five minutes for the whole
    answer, which a large shard can outlast."""
    if protocol not in ("http", "https"):
        return {}
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, sock_connect=HTTP_TIMEOUT_S, sock_read=HTTP_TIMEOUT_S)
    return {"client_kwargs": {"timeout": timeout}}


def glob_urls(pattern: str) -> list[str]:
    """The URLs a glob on a remote file system matches, sorted (s3://b/train-*.tar)."""
    fs, path = filesystem(pattern)
    try:
        found = fs.glob(path)
    except Exception as error:  # each file system raises its own types
        raise DataError(f"{pattern}: cannot be listed ({_reason(error)}); name the shards with a range "
                        "{000000..000009} instead of a glob") from None
    return sorted(fs.unstrip_protocol(name) for name in found)


def transient(error: BaseException) -> bool:
    """Worth another try: not a missing file, a refused access or an answer of status 4xx (other than 408 and 429)."""
    if isinstance(error, _PERMANENT):
        return False
    status = getattr(error, "status", None)
    if isinstance(status, int):
        return status >= 500 or status in _RETRIED_STATUS
    return True


def _reason(error: BaseException) -> str:
    if isinstance(error, FileNotFoundError):
        return "not found"
    status = getattr(error, "status", None)
    return f"status {status}" if isinstance(status, int) else first_line(error)


class RetryingReader(io.RawIOBase):
    """One remote file read front to back, retried and reopened as the module docstring says."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.fs, self.path = filesystem(url)
        self.position = 0
        self.failures = 0
        self.stream = self._reopen()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while True:
            try:
                data = self.stream.read(len(view))
                break
            except Exception as error:  # each file system raises its own types
                self._failed(error)
                with contextlib.suppress(Exception):  # the broken stream: closing it may fail too, and changes nothing
                    self.stream.close()
                self.stream = self._reopen()
        view[: len(data)] = data
        self.position += len(data)
        if data:
            self.failures = 0
        return len(data)

    def close(self) -> None:
        if not self.closed and hasattr(self, "stream"):
            self.stream.close()
        super().close()

    def _reopen(self) -> IO[bytes]:
        """The file opened and brought to `position`, retried while the failures are transient."""
        while True:
            try:
                return self._open()
            except Exception as error:  # each file system raises its own types
                self._failed(error)

    def _open(self) -> IO[bytes]:
        options = {"block_size": 0} if url_protocol(self.url) in ("http", "https") else {}  # a streamed answer
        stream: IO[bytes] = self.fs.open(self.path, "rb", **options)
        try:
            self._skip_to_position(stream)
        except BaseException:  # a failed seek or skip: the new stream is closed before the next try
            with contextlib.suppress(Exception):
                stream.close()
            raise
        return stream

    def _skip_to_position(self, stream: IO[bytes]) -> None:
        """Bring a newly opened `stream` to `position`: a seek, or reading up to it where it cannot seek."""
        if not self.position:
            return
        try:
            stream.seek(self.position)
        except (ValueError, OSError):  # a stream that cannot seek: read up to where it broke
            left = self.position
            while left:
                dropped = len(stream.read(min(left, _SKIP_CHUNK)))
                if not dropped:
                    raise DataError(f"{self.url}: ended sooner on a retry than before; it changed while it was "
                                    "read, so read it again") from None
                left -= dropped

    def _failed(self, error: Exception) -> None:
        """Wait before the next try, or raise the one-line error when `error` is permanent or the tries are spent."""
        if isinstance(error, DataError):
            raise error
        self.failures += 1
        if not transient(error) or self.failures >= ATTEMPTS:
            tries = f" after {self.failures} tries" if transient(error) else ""
            raise DataError(f"{self.url}: cannot be read ({_reason(error)}){tries}; check the address, or copy the "
                            "files here") from None
        time.sleep(RETRY_WAIT_S * 2 ** (self.failures - 1))


__all__ = ["ATTEMPTS", "PACKAGES", "RETRY_WAIT_S", "RetryingReader", "URL_MARK", "filesystem", "glob_urls", "is_url",
           "transient", "url_protocol"]
