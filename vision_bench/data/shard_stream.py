"""WebDataset tar shards read as streams: shard patterns, local files, URLs, `pipe:` commands.

A shard is read front to back as a tar stream (`tarfile` mode `r|*`, so `.tar.gz` works too), never
indexed: a URL or a command's output reads like a local file. URLs of any protocol fsspec knows
(http(s), s3://, gs://, hf://, memory://) open the same way, with retries (`remote_files`). A sample
is a run of adjacent members sharing a key (the base name up to its first dot): `{key}.input.png`,
`{key}.target.png`, `{key}.json`, as `vision-bench export --format webdataset` writes them.

A shard pattern is one string, or one per split (a mapping split -> pattern): `{split}` stands for the
split's name, `{000000..000003}` for a
zero-padded range and `{a,b}` for a list (WebDataset's brace notation); local paths and URLs of file
systems that list (s3://, gs://, hf://, memory://; not http) may also hold `*` / `?` globs.
`pipe:CMD` runs CMD in a shell and reads its output, so the pattern comes from the same config that
could name any command (a config read back from a run folder is refused before this:
`vision_bench.data.opening.check_stored_source`). The command's output is closed at the archive's end,
so a command that goes on writing ends by SIGPIPE, and one that lingers is stopped after `END_WAIT_S`.
"""

from __future__ import annotations

import glob
import io
import os
import re
import signal
import subprocess
import tarfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from vision_bench.data.remote_files import RetryingReader, glob_urls, is_url, url_protocol
from vision_bench.data.webdataset import split_key
from vision_bench.errors import CorruptFileError, DataError

SPLIT_PLACEHOLDER = "{split}"
PIPE_PREFIX = "pipe:"
_BRACE = re.compile(r"\{([^{}]*)\}")
_RANGE = re.compile(r"(\d+)\.\.(\d+)")
_GLOB_CHARACTERS = ("*", "?", "[")
_UNLISTED = ("http", "https")
_READ_SIZE = 1 << 20
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
_GRACE_S = 1.0
END_WAIT_S = 10.0
"""How long a `pipe:` command may take to end once its archive has been read, before it is stopped."""
_CLOSED_PIPE = (-signal.SIGPIPE, 128 + signal.SIGPIPE)  # a command killed because we closed its output (shell: 141)

Sample = tuple[str, dict[str, bytes]]


def is_remote(source: str) -> bool:
    """A URL or a command: shards that cannot be counted without reading them in full."""
    return source.startswith(PIPE_PREFIX) or is_url(source)


def looks_like_shards(source: str) -> bool:
    """A `pipe:` command, an http(s) URL, or a path or URL (pattern) ending in a tar suffix."""
    return source.startswith(PIPE_PREFIX) or url_protocol(source) in ("http", "https") or source.endswith(_TAR_SUFFIXES)


def expand_braces(pattern: str) -> list[str]:
    """`a-{00..02}.tar` -> `a-00.tar`, `a-01.tar`, `a-02.tar`; `{x,y}` lists; several braces multiply."""
    match = _BRACE.search(pattern)
    if match is None:
        return [pattern]
    head, body, tail = pattern[: match.start()], match.group(1), pattern[match.end():]
    numbers = _RANGE.fullmatch(body)
    if numbers:
        first, last = numbers.groups()
        if int(last) < int(first):
            raise DataError(f"{pattern}: the range {{{body}}} counts down; write it low..high")
        width = len(first) if first.startswith("0") else 0
        choices = [str(number).zfill(width) for number in range(int(first), int(last) + 1)]
    elif "," in body:
        choices = body.split(",")
    else:
        raise DataError(f"{pattern}: cannot expand {{{body}}}; write a range {{000000..000009}} or a list {{a,b}}")
    return [head + choice + rest for choice in choices for rest in expand_braces(tail)]


def split_pattern(pattern: str, split: str) -> str:
    """The pattern of one split: `{split}` replaced by its name (the source's own name for it)."""
    if SPLIT_PLACEHOLDER not in pattern:
        raise DataError(
            f"{pattern}: a shard pattern needs {SPLIT_PLACEHOLDER} where the split's name goes "
            f"(e.g. shards/{SPLIT_PLACEHOLDER}-{{000000..000003}}.tar), so that each split reads its own shards"
        )
    return pattern.replace(SPLIT_PLACEHOLDER, split)


def split_shards(patterns: str | Mapping[str, str], split: str, name: str) -> str:
    """The shard pattern of our `split`, whose source calls it `name`: one pattern for every split (`{split}`
    standing for `name`), or the split's own from a mapping split -> pattern (where `{split}` is optional)."""
    if isinstance(patterns, str):
        return split_pattern(patterns, name)
    if split not in patterns:
        leave = (f"leave {split} out of dataset.val_splits" if split.startswith("val")
                 else f"evaluate other splits than {split}")
        raise DataError(f"the shard patterns name no {split} split (they name {', '.join(patterns)}); add "
                        f"`{split}: PATTERN` to dataset.path, or {leave}")
    return patterns[split].replace(SPLIT_PLACEHOLDER, name)


def check_pattern(pattern: str) -> None:
    """A pattern that can name shards: a `pipe:` command, an http(s) URL or a path or URL ending in a tar suffix,
    whose braces expand; else a `DataError` saying what a shard pattern is."""
    if not looks_like_shards(pattern):
        raise DataError(f"{pattern!r} is not a shard pattern; name tar shards (ending .tar), an http(s) URL or a "
                        "pipe: command, e.g. shards/train-{000000..000099}.tar")
    expand_braces(pattern)


def shard_urls(pattern: str) -> list[str]:
    """Every shard a split pattern names, in order; local files must exist, globs must match."""
    shards: list[str] = []
    for name in expand_braces(pattern):
        globbed = (any(mark in name for mark in _GLOB_CHARACTERS) and not name.startswith(PIPE_PREFIX)
                   and url_protocol(name) not in _UNLISTED)  # an http(s) `?` starts a query
        if is_remote(name) and not globbed:
            shards.append(name)
        elif globbed:
            matches = glob_urls(name) if is_url(name) else sorted(glob.glob(name))
            if not matches:
                raise DataError(f"{name}: matches no file; check the shard pattern")
            shards.extend(matches)
        elif Path(name).is_file():
            shards.append(name)
        else:
            raise DataError(f"{name}: no such shard file; check the shard pattern (the range, the folder)")
    return shards


@contextmanager
def open_stream(url: str) -> Iterator[IO[bytes]]:
    """A readable binary stream of one shard: a local file, a remote file (retried) or a command's output."""
    if url.startswith(PIPE_PREFIX):
        with _command_output(url) as stream:
            yield stream
    elif is_url(url):
        with io.BufferedReader(RetryingReader(url), buffer_size=_READ_SIZE) as reader:
            yield reader
    else:
        try:
            handle = open(url, "rb")
        except OSError as error:
            raise DataError(f"{url}: cannot be opened ({error.strerror}); check the shard pattern") from None
        with handle:
            yield handle


@contextmanager
def _command_output(url: str) -> Iterator[IO[bytes]]:
    """The standard output of `pipe:COMMAND`, closed as soon as the reader is done with it (the archive's
    end, a broken stream, an early stop): what the command writes after that is not read, and the SIGPIPE
    it then gets is no failure. A command that fails on its own is one error naming it."""
    command = url[len(PIPE_PREFIX):]
    # unbuffered, so a read returns what has arrived instead of waiting for more (the archive's end may be
    # followed by nothing yet); a session of its own, so a command that has to be stopped is stopped whole
    process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, bufsize=0, start_new_session=True)
    assert process.stdout is not None
    try:
        yield process.stdout
    except Exception:  # a broken stream: the command's own failure is the better message
        status = _stop(process, _GRACE_S)
        if status is not None and status not in (0, *_CLOSED_PIPE):
            raise DataError(_failed(url, status)) from None
        raise
    except BaseException:  # the reader stopped early (or was interrupted): whatever the command makes of it
        _stop(process, _GRACE_S)
        raise
    status = _stop(process, END_WAIT_S)
    if status is None:
        raise DataError(f"{url}: the command was still running {END_WAIT_S:g} s after its tar archive ended, so "
                        "it was stopped; make it end once it has written the archive")
    if status not in (0, *_CLOSED_PIPE):
        raise DataError(_failed(url, status))


def _failed(url: str, status: int) -> str:
    return f"{url}: the command failed (exit status {status}); run it in a shell to see why"


def _stop(process: subprocess.Popen, wait_s: float) -> int | None:
    """Close the command's output and give it `wait_s` to end; its exit status, or None when it had to be killed."""
    assert process.stdout is not None
    process.stdout.close()
    try:
        return process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the shell and what it started
        process.wait()
        return None


def tar_samples(url: str) -> Iterator[Sample]:
    """`(key, {field: bytes})` of every sample of one shard, in stream order."""
    with open_stream(url) as stream:
        try:
            with tarfile.open(fileobj=stream, mode="r|*") as archive:
                key = ""  # a tar member's key is never empty (hidden names are skipped)
                fields: dict[str, bytes] = {}
                for member in archive:
                    if not member.isfile() or Path(member.name).name.startswith("."):
                        continue
                    member_key, field = split_key(member.name)
                    if member_key != key and fields:
                        yield key, fields
                        fields = {}
                    key = member_key
                    data = archive.extractfile(member)
                    fields[field] = data.read() if data is not None else b""
                if fields:
                    yield key, fields
        except (tarfile.TarError, EOFError) as error:
            if url.startswith(PIPE_PREFIX):
                raise CorruptFileError(f"{url}: the command's output is not a tar stream ({error}); make it write "
                                       "a tar archive to its standard output") from None
            raise CorruptFileError(f"{url}: not a readable tar stream ({error}); check or re-make the shard") from None


def count_samples(url: str, keep: Callable[[str], bool] | None = None) -> int:
    """Samples in one local shard (those whose key `keep` keeps, when given), from its member headers (an
    uncompressed tar skips the member data; a `.tar.gz` is decompressed once to find them)."""
    keys: set[str] = set()
    try:
        with tarfile.open(url, mode="r:*") as archive:
            for member in archive:
                if member.isfile() and not Path(member.name).name.startswith("."):
                    keys.add(split_key(member.name)[0])
    except (tarfile.TarError, EOFError, OSError) as error:
        raise CorruptFileError(f"{url}: not a readable tar shard ({error}); check or re-make the shard") from None
    return len(keys) if keep is None else sum(map(keep, keys))


__all__ = [
    "PIPE_PREFIX",
    "SPLIT_PLACEHOLDER",
    "check_pattern",
    "count_samples",
    "expand_braces",
    "is_remote",
    "looks_like_shards",
    "open_stream",
    "shard_urls",
    "split_pattern",
    "split_shards",
    "tar_samples",
]
