"""WebDataset tar shards read as streams: shard patterns, local files, http(s) URLs, `pipe:` commands.

A shard is read front to back as a tar stream (`tarfile` mode `r|*`, so `.tar.gz` works too), never
indexed: a URL or a command's output reads like a local file. A sample is a run of adjacent members
sharing a key (the base name up to its first dot): `{key}.input.png`, `{key}.target.png`,
`{key}.json`, as `vision-bench export --format webdataset` writes them.

A shard pattern is one string: `{split}` stands for the split's name, `{000000..000003}` for a
zero-padded range and `{a,b}` for a list (WebDataset's brace notation); local paths may also hold
`*` / `?` globs. `pipe:CMD` runs CMD in a shell and reads its output, so the pattern comes from the
same config that could name any command.
"""

from __future__ import annotations

import glob
import re
import subprocess
import tarfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from vision_bench.data.errors import CorruptFileError, DataError
from vision_bench.data.webdataset import split_key

SPLIT_PLACEHOLDER = "{split}"
PIPE_PREFIX = "pipe:"
URL_PREFIXES = ("http://", "https://")
HTTP_TIMEOUT_S = 60
_BRACE = re.compile(r"\{([^{}]*)\}")
_RANGE = re.compile(r"(\d+)\.\.(\d+)")
_GLOB_CHARACTERS = ("*", "?", "[")
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
_DRAIN_CHUNK = 1 << 16
_GRACE_S = 1.0

Sample = tuple[str, dict[str, bytes]]


def is_remote(source: str) -> bool:
    """A URL or a command: shards that cannot be counted without reading them in full."""
    return source.startswith((PIPE_PREFIX, *URL_PREFIXES))


def looks_like_shards(source: str) -> bool:
    """A `pipe:` command, an http(s) URL, or a path (pattern) ending in a tar suffix."""
    return is_remote(source) or source.endswith(_TAR_SUFFIXES)


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


def shard_urls(pattern: str) -> list[str]:
    """Every shard a split pattern names, in order; local files must exist, globs must match."""
    shards: list[str] = []
    for name in expand_braces(pattern):
        if is_remote(name):
            shards.append(name)
        elif any(mark in name for mark in _GLOB_CHARACTERS):
            matches = sorted(glob.glob(name))
            if not matches:
                raise DataError(f"{name}: matches no file; check the shard pattern")
            shards.extend(matches)
        elif Path(name).is_file():
            shards.append(name)
        else:
            raise DataError(f"{name}: no such shard file; check the shard pattern (the range, the folder)")
    return shards


@contextmanager
def open_stream(url: str) -> Iterator[BinaryIO]:
    """A readable binary stream of one shard: a local file, an http(s) response or a command's output."""
    if url.startswith(PIPE_PREFIX):
        with _command_output(url) as stream:
            yield stream
    elif url.startswith(URL_PREFIXES):
        try:
            response = urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S)
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise DataError(f"{url}: cannot be read ({error}); check the address, or copy the shards here") from None
        with response:
            yield response
    else:
        try:
            handle = open(url, "rb")
        except OSError as error:
            raise DataError(f"{url}: cannot be opened ({error.strerror}); check the shard pattern") from None
        with handle:
            yield handle


@contextmanager
def _command_output(url: str) -> Iterator[BinaryIO]:
    """The standard output of `pipe:COMMAND`; a command that fails is one error naming it."""
    command = url[len(PIPE_PREFIX):]
    process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE)
    assert process.stdout is not None
    try:
        yield process.stdout
        while process.stdout.read(_DRAIN_CHUNK):  # what follows the tar's end (padding): read, so the command ends
            pass
    except GeneratorExit:  # the reader stopped early: whatever the command makes of that is no error
        _stop(process)
        raise
    except Exception:  # a broken stream: the command's own failure is the better message
        if _stop(process) > 0:
            raise DataError(f"{url}: the command failed (exit status {process.returncode}); run it in a shell "
                            "to see why") from None
        raise
    process.stdout.close()
    if process.wait() != 0:
        raise DataError(f"{url}: the command failed (exit status {process.returncode}); run it in a shell to see why")


def _stop(process: subprocess.Popen) -> int:
    """Close the command's output and let it end (a moment's grace, then a kill); its exit status."""
    assert process.stdout is not None
    process.stdout.close()
    try:
        return process.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def tar_samples(url: str) -> Iterator[Sample]:
    """`(key, {field: bytes})` of every sample of one shard, in stream order."""
    with open_stream(url) as stream:
        try:
            with tarfile.open(fileobj=stream, mode="r|*") as archive:
                key, fields = None, {}
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
            raise CorruptFileError(f"{url}: not a readable tar stream ({error}); check or re-make the shard") from None


def count_samples(url: str) -> int:
    """Samples in one local shard, from its member headers (an uncompressed tar skips the member data;
    a `.tar.gz` is decompressed once to find them)."""
    keys: set[str] = set()
    try:
        with tarfile.open(url, mode="r:*") as archive:
            for member in archive:
                if member.isfile() and not Path(member.name).name.startswith("."):
                    keys.add(split_key(member.name)[0])
    except (tarfile.TarError, EOFError, OSError) as error:
        raise CorruptFileError(f"{url}: not a readable tar shard ({error}); check or re-make the shard") from None
    return len(keys)


__all__ = [
    "SPLIT_PLACEHOLDER",
    "count_samples",
    "expand_braces",
    "is_remote",
    "looks_like_shards",
    "open_stream",
    "shard_urls",
    "split_pattern",
    "tar_samples",
]
