"""Importing the user's modules, forgetting them for a reload, and their own tracebacks."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import sysconfig
import threading
import traceback
from hashlib import sha256
from pathlib import Path
from types import ModuleType

from agent_core.user_code._own_packages import is_own_module
from agent_core.user_code.config import is_file_ref

_LOADER_FILES = frozenset(
    {__file__, str(Path(__file__).with_name("registry.py")), importlib.__file__}
)

_user_modules: set[str] = set()
"""Names in `sys.modules` that the user's entries imported; a reload drops them."""
_lock = threading.RLock()


def import_user_module(module_ref: str, project: Path) -> ModuleType:
    """Import a `file.py` path or a dotted module, remembering the user modules it brought in.

    A file is imported under a unique module name, with its folder on `sys.path` so that it
    can import its siblings; a dotted module is found from the project folder.
    """
    with _lock:
        before = set(sys.modules)
        try:
            if is_file_ref(module_ref):
                return _import_file(Path(module_ref))
            if str(project) not in sys.path:
                sys.path.insert(0, str(project))
            return importlib.import_module(module_ref)
        finally:
            # Even after a failure: a sibling that did import must be imported afresh next time.
            added = set(sys.modules) - before
            _user_modules.update(n for n in added if _is_user_module(n, sys.modules.get(n)))
            if is_file_ref(module_ref):
                _user_modules.add(file_module_name(Path(module_ref)))


def forget_user_modules() -> None:
    """Drop the user's modules from `sys.modules`, so the next import runs their code anew."""
    with _lock:
        for name in list(_user_modules):
            sys.modules.pop(name, None)
        _user_modules.clear()
    importlib.invalidate_caches()


def user_module_files() -> list[Path]:
    """The files of the user's modules imported now: what a watcher of their code polls."""
    with _lock:
        modules = [sys.modules.get(name) for name in _user_modules]
    files = {getattr(m, "__file__", None) for m in modules if m is not None}
    return sorted(Path(f) for f in files if f)


def file_module_name(path: Path) -> str:
    """The unique module name a file target is imported under."""
    stem = re.sub(r"\W", "_", path.stem)
    return f"_stepwise_user_{stem}_{sha256(str(path).encode()).hexdigest()[:10]}"


def _import_file(path: Path) -> ModuleType:
    name = file_module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Before running it: dataclasses and pickling look it up.
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _site_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    return tuple(os.path.normpath(paths[key]) + os.sep for key in keys if key in paths)


def _is_user_module(name: str, module: ModuleType | None) -> bool:
    """Whether `module` is the user's source, not ours, the standard library or installed."""
    if is_own_module(name, getattr(module, "__name__", None)):
        return False
    filename = getattr(module, "__file__", None)
    if not filename:
        return False
    filename = os.path.normpath(filename)
    parts = Path(filename).parts
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    return not filename.startswith(_site_dirs())


def _is_loader_frame(filename: str) -> bool:
    return filename in _LOADER_FILES or filename.startswith("<frozen importlib")


def user_traceback(exc: BaseException) -> str:
    """`exc` formatted as Python does, without the frames of this loader and of importlib."""
    formatted = traceback.TracebackException.from_exception(exc)
    seen: set[int] = set()
    todo = [formatted]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        kept = [frame for frame in current.stack if not _is_loader_frame(frame.filename)]
        current.stack = traceback.StackSummary.from_list(kept)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return "".join(formatted.format())
