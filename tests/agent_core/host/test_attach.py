"""`pause_before`'s spellings: each names a breakpoint, and a typo is refused with the three."""

from __future__ import annotations

import pytest

from agent_core.errors import UserError
from agent_core.host.attach import breakpoints_of
from agent_core.runtime.breakpoints import AtStep, OnTool


def test_each_spelling_names_its_breakpoint():
    assert breakpoints_of(["tool:refund", "tool:*", "step:3"]) == [
        OnTool("refund"),
        OnTool(None),
        AtStep(2),  # Before the 3rd step runs: 2 completed.
    ]


@pytest.mark.parametrize("typo", ["refund", "tool:", "step:0", "step:x", "steps:2"])
def test_a_typo_is_refused_naming_the_spellings(typo):
    with pytest.raises(UserError, match="names no breakpoint") as caught:
        breakpoints_of([typo])
    assert '"tool:NAME"' in caught.value.hint
