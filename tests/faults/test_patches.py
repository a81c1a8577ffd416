"""The patch helpers fail a test whose patch reaches nothing, and let one that does through."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from types import ModuleType

import pytest

from agent_core.runtime import claims, transaction
from tests.faults._patches import PatchNotReached, patch_callable, patch_global, readers_of


def test_a_global_read_where_it_is_patched_is_patched(monkeypatch: pytest.MonkeyPatch) -> None:
    assert readers_of(transaction, "CLAIM_PERSIST_DELAY_S")
    patch_global(monkeypatch, transaction, "CLAIM_PERSIST_DELAY_S", 60.0)
    assert transaction.CLAIM_PERSIST_DELAY_S == 60.0


def test_patching_a_global_where_nothing_reads_it_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # claims defines the delay; the transaction imported it by name and reads its own copy.
    with pytest.raises(PatchNotReached, match=r"no code in agent_core\.runtime\.claims reads"):
        patch_global(monkeypatch, claims, "CLAIM_PERSIST_DELAY_S", 60.0)
    assert claims.CLAIM_PERSIST_DELAY_S != 60.0  # Refused before patching anything.


@pytest.fixture
def two_modules() -> Iterator[tuple[ModuleType, ModuleType]]:
    """`home` defines and reads LIMIT; `user` imported it by name and reads its own copy."""
    made = []
    for name, source in (
        ("agent_core._patch_home", "LIMIT = 10.5\ndef limit():\n    return LIMIT\n"),
        (
            "agent_core._patch_user",
            "from agent_core._patch_home import LIMIT\ndef doubled():\n    return 2 * LIMIT\n",
        ),
    ):
        module = ModuleType(name)
        sys.modules[name] = module
        exec(compile(textwrap.dedent(source), name, "exec"), vars(module))
        made.append(module)
    yield made[0], made[1]
    for module in made:
        sys.modules.pop(module.__name__, None)


def test_a_global_read_in_two_modules_cannot_be_patched_in_one(
    monkeypatch: pytest.MonkeyPatch, two_modules: tuple[ModuleType, ModuleType]
) -> None:
    home, user = two_modules
    assert readers_of(home, "LIMIT") == ["limit"] and readers_of(user, "LIMIT") == ["doubled"]
    with pytest.raises(PatchNotReached, match=r"agent_core\._patch_user hold LIMIT too"):
        patch_global(monkeypatch, home, "LIMIT", 1.0)
    with pytest.raises(PatchNotReached, match=r"agent_core\._patch_home hold LIMIT too"):
        patch_global(monkeypatch, user, "LIMIT", 1.0)
    assert (home.limit(), user.doubled()) == (10.5, 21.0)  # Neither was patched.


def test_a_callable_patch_counts_its_calls_and_fails_when_never_called(
    monkeypatch: pytest.MonkeyPatch, two_modules: tuple[ModuleType, ModuleType]
) -> None:
    home, _ = two_modules
    patch = patch_callable(monkeypatch, home, "limit", lambda: 3.0)
    with pytest.raises(
        PatchNotReached, match=r"nothing called the patched agent_core\._patch_home"
    ):
        patch.assert_reached()
    assert home.limit() == 3.0
    patch.assert_reached()
    assert patch.calls == 1
