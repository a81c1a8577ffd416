"""File operations that cannot leave a folder, whatever is swapped in while they run.

A path is checked once (by `Workspace`), but a program running beside the tools (the Python
sandbox, a parallel step, another process) can replace a folder with a symbolic link between
that check and the use. So nothing here opens a path as a whole: each operation opens the
folder, then every part of the path relative to the part before (`dir_fd=`) with
`O_NOFOLLOW`, so a link at any level is refused rather than followed. A file with more than
one hard link is refused too: a hard link made inside the folder can point at a file outside
it, and no path check can tell.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

__all__ = [
    "ConfinedFileError",
    "FileUpdate",
    "entry_stat",
    "open_folder",
    "opened_file",
    "parts_of",
    "read_file",
    "remove_file",
    "update_file",
    "walk",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC | getattr(os, "O_DIRECTORY", 0)
# O_NONBLOCK: opening a named pipe someone left there must not hang the step.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
# Read and write: the old content is read through the descriptor the write uses.
_UPDATE_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


class ConfinedFileError(OSError):
    """A file operation refused because it would leave the folder or touch a shared file."""


def parts_of(relative_path: str) -> list[str]:
    """The names along `relative_path` (`.` parts dropped); the caller checked its shape."""
    return [part for part in PurePosixPath(relative_path).parts if part not in ("", ".")]


@contextlib.contextmanager
def open_folder(folder: Path, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor of `folder/parts...`, reached without following a link at any level.

    Args:
        folder: The confining folder (opened as it is: the caller trusts it).
        parts: Folder names inside it.
        create: Make missing folders on the way.
    """
    fd = os.open(folder, _DIR_FLAGS)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            inner = _open_dir_at(fd, part)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _open_dir_at(fd: int, name: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        raise _link_refused(name)
    raise NotADirectoryError(errno.ENOTDIR, f"{name!r} is a file, not a folder")


def _link_refused(name: str) -> ConfinedFileError:
    return ConfinedFileError(
        errno.ELOOP, f"{name!r} is a symbolic link, and links are not followed"
    )


def _check_file(fd: int, name: str) -> os.stat_result:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{name!r} is a folder")
    if not stat.S_ISREG(info.st_mode):
        raise ConfinedFileError(errno.EINVAL, f"{name!r} is not a regular file (a pipe or device)")
    if info.st_nlink > 1:
        raise ConfinedFileError(
            errno.EMLINK,
            f"{name!r} has {info.st_nlink} hard links; a file shared with another path may"
            " lie outside the folder, so it is not touched",
        )
    return info


def _open_file_at(fd: int, name: str, flags: int, mode: int = 0o644) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_refused(name) from None
        raise


@contextlib.contextmanager
def opened_file(folder: Path, relative_path: str) -> Iterator[tuple[int, os.stat_result]]:
    """A read descriptor of a regular, singly linked file inside `folder`, and its status.

    Raises:
        FileNotFoundError: There is no such file.
        IsADirectoryError: It is a folder.
        ConfinedFileError: A link on the way, a pipe or device, or a file with hard links.
    """
    *folders, name = parts_of(relative_path)
    with open_folder(folder, folders) as parent:
        fd = _open_file_at(parent, name, _READ_FLAGS)
    try:
        yield fd, _check_file(fd, name)
    finally:
        os.close(fd)


def read_file(folder: Path, relative_path: str, *, limit: int) -> bytes:
    """At most `limit + 1` bytes of the file (so a caller can tell it is over `limit`).

    Raises:
        The errors of `opened_file`.
    """
    with opened_file(folder, relative_path) as (fd, _):
        chunks, size = [], 0
        while size <= limit:  # never more, even if the file grows meanwhile
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)


class FileUpdate:
    """A file opened to be replaced: `previous` is what it held (None when new)."""

    def __init__(self, fd: int, previous: bytes | None) -> None:
        self._fd = fd
        self.previous = previous

    def replace(self, data: bytes) -> None:
        """Make `data` the file's whole content."""
        os.ftruncate(self._fd, 0)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]


@contextlib.contextmanager
def update_file(
    folder: Path, relative_path: str, *, keep_limit: int | None
) -> Iterator[FileUpdate]:
    """Open (or create) a file to replace its content, after reading what it held.

    The old content is read through the same descriptor the write uses, so the journal
    keeps exactly what is overwritten. Missing folders on the way are created.

    Args:
        folder: The confining folder.
        relative_path: The file inside it.
        keep_limit: Refuse an existing file over this many bytes (its content is kept);
            None: the old content is not wanted (`previous` stays None).

    Raises:
        ConfinedFileError: A link on the way, a pipe or device, a file with hard links, or
            an existing file over `keep_limit` (errno EFBIG).
        IsADirectoryError: It is a folder.
    """
    *folders, name = parts_of(relative_path)
    with open_folder(folder, folders, create=True) as parent:
        try:
            fd, created = _open_file_at(parent, name, _UPDATE_FLAGS | os.O_CREAT | os.O_EXCL), True
        except FileExistsError:
            fd, created = _open_file_at(parent, name, _UPDATE_FLAGS), False
    try:
        info = _check_file(fd, name)
        previous = None
        if not created and keep_limit is not None:
            previous = _previous(fd, name, info, keep_limit)
        yield FileUpdate(fd, previous)
    finally:
        os.close(fd)


def _previous(fd: int, name: str, info: os.stat_result, keep_limit: int) -> bytes:
    if info.st_size > keep_limit:
        raise ConfinedFileError(
            errno.EFBIG, f"{name!r} is {info.st_size:,} bytes, over the {keep_limit:,} kept"
        )
    return os.pread(fd, keep_limit + 1, 0)


def remove_file(folder: Path, relative_path: str) -> None:
    """Delete the file (a missing file or folder on the way is fine: nothing to remove)."""
    *folders, name = parts_of(relative_path)
    try:
        with open_folder(folder, folders) as parent:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, f"{name!r} is a folder")
            os.unlink(name, dir_fd=parent)  # unlink never follows a link: it removes it
    except FileNotFoundError:
        return


def entry_stat(folder: Path, relative_path: str) -> os.stat_result:
    """The entry's own status (a link is described, not followed)."""
    parts = parts_of(relative_path)
    if not parts:
        return os.stat(folder, follow_symlinks=False)
    *folders, name = parts
    with open_folder(folder, folders) as parent:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)


def walk(folder: Path, relative_path: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under a folder inside `folder`, as (path relative to `folder`, status).

    Folders are entered by descriptor (`os.fwalk`), never through a link.
    """
    base = parts_of(relative_path)
    with open_folder(folder, base) as top:
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=top):
            dirnames.sort()
            prefix = PurePosixPath(*base, dirpath)
            for name in sorted(dirnames + filenames):
                with contextlib.suppress(FileNotFoundError):  # gone since the listing
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    yield (prefix / name).as_posix(), info
