from __future__ import annotations

import random

import pytest

from agent_core.llms.base import ChatMessage, Role, ToolCall
from agent_core.memory import (
    DEFAULT_TOKEN_LIMIT,
    ChatMemoryBuffer,
    MemorySnapshot,
    StagedMemory,
    _message_tokens,
)

ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


def msg(role: Role, content: str = "", **fields: object) -> ChatMessage:
    return ChatMessage(role=role, content=content, **fields)  # type: ignore[arg-type]


def user(content: str) -> ChatMessage:
    return msg("user", content)


def assistant(content: str) -> ChatMessage:
    return msg("assistant", content)


def contents(messages: list[ChatMessage]) -> list[str]:
    return [m.content for m in messages]


def random_message(rng: random.Random, index: int) -> ChatMessage:
    role = rng.choice(ROLES)
    content = f"m{index}:" + "x" * rng.randint(0, 40)
    if role == "assistant" and rng.random() < 0.3:
        calls = tuple(
            ToolCall(id=f"c{index}.{j}", name="add" * rng.randint(1, 3), args={"a": 1, "b": j})
            for j in range(rng.randint(1, 2))
        )
        return msg(role, content, tool_calls=calls)
    if role == "tool":
        return msg(role, content, tool_call_id=f"c{index}")
    return msg(role, content)


def random_messages(rng: random.Random, n: int | None = None) -> list[ChatMessage]:
    count = rng.randint(0, 12) if n is None else n
    return [random_message(rng, i) for i in range(count)]


def reference_get(messages: list[ChatMessage], budget: int) -> list[ChatMessage]:
    """The newest run of messages whose tokens fit `budget`, minus a leading assistant/tool."""
    window: list[ChatMessage] = []
    used = 0
    for message in reversed(messages):
        used += _message_tokens(message)
        if used > budget:
            break
        window.insert(0, message)
    while window and window[0].role in ("assistant", "tool"):
        window.pop(0)
    return window


def interesting_budgets(messages: list[ChatMessage], rng: random.Random) -> set[int]:
    """Every suffix sum and its neighbours (the off-by-one boundaries), plus a few others."""
    budgets = {-5, 0, 1, 3, 4, 5}
    total = 0
    for message in reversed(messages):
        total += _message_tokens(message)
        budgets |= {total - 1, total, total + 1}
    budgets |= {rng.randint(0, total + 10) for _ in range(5)}
    return budgets


# --- Windowing ---------------------------------------------------------------------------


def test_message_tokens_counts_content_tool_calls_and_overhead() -> None:
    plain = msg("user", "x" * 8)
    with_call = msg("assistant", "x" * 8, tool_calls=(ToolCall(name="abcd", args={"a": 1}),))

    assert _message_tokens(plain) == 2 + 4
    assert _message_tokens(with_call) == 2 + 4 + (1 + 4)
    assert _message_tokens(msg("user")) == 4


def test_get_matches_brute_force_reference_at_every_boundary() -> None:
    rng = random.Random(20240501)
    checked = 0
    for _ in range(400):
        messages = random_messages(rng)
        for limit in interesting_budgets(messages, rng):
            buffer = ChatMemoryBuffer(messages=messages, token_limit=limit)
            assert buffer.get() == reference_get(messages, limit), (limit, messages)
            checked += 1
    assert checked > 4000


def test_get_with_initial_token_count_matches_reference() -> None:
    rng = random.Random(7)
    for _ in range(300):
        messages = random_messages(rng)
        limit = rng.randint(0, 200)
        buffer = ChatMemoryBuffer(messages=messages, token_limit=limit)
        for initial in interesting_budgets(messages, rng) | {limit, limit + 1, limit - 1}:
            expected = reference_get(messages, limit - initial)
            assert buffer.get(initial_token_count=initial) == expected, (limit, initial)


def test_get_matches_reference_when_built_by_put_put_messages_and_set() -> None:
    rng = random.Random(99)
    for _ in range(200):
        first, second, third = (random_messages(rng) for _ in range(3))
        buffer = ChatMemoryBuffer(token_limit=rng.randint(0, 150))
        for message in first:
            buffer.put(message)
        buffer.put_messages(second)
        assert buffer.get() == reference_get(first + second, buffer.token_limit)
        buffer.set(third)
        buffer.put_messages(first)
        assert buffer.get() == reference_get(third + first, buffer.token_limit)


def test_get_window_exactly_at_the_limit() -> None:
    messages = [user("a" * 4), assistant("b" * 4), user("c" * 4)]  # 5 tokens each
    at_limit = ChatMemoryBuffer(messages=messages, token_limit=15)
    one_short = ChatMemoryBuffer(messages=messages, token_limit=14)

    assert at_limit.get() == messages
    # Fits the last two, but the window may not start with the assistant turn.
    assert contents(one_short.get()) == ["cccc"]
    assert contents(at_limit.get(initial_token_count=5)) == ["cccc"]
    assert at_limit.get(initial_token_count=15) == []
    assert at_limit.get(initial_token_count=100) == []


def test_get_never_starts_with_assistant_or_tool() -> None:
    rng = random.Random(3)
    for _ in range(300):
        messages = random_messages(rng)
        buffer = ChatMemoryBuffer(messages=messages, token_limit=rng.randint(0, 120))
        window = buffer.get()
        if window:
            assert window[0].role in ("system", "user")
            # And the window is still the newest messages, in order.
            assert messages[len(messages) - len(window) :] == window


def test_get_drops_a_message_larger_than_the_whole_limit() -> None:
    buffer = ChatMemoryBuffer(messages=[user("small"), user("x" * 400)], token_limit=50)

    assert buffer.get() == []


def test_get_all_returns_a_copy_and_len_counts_messages() -> None:
    buffer = ChatMemoryBuffer(messages=[user("a"), assistant("b")], token_limit=1)

    everything = buffer.get_all()
    everything.append(user("c"))

    assert contents(buffer.get_all()) == ["a", "b"]
    assert len(buffer) == 2
    assert ChatMemoryBuffer().token_limit == DEFAULT_TOKEN_LIMIT


def test_buffer_does_not_alias_the_list_it_was_built_from() -> None:
    source = [user("a")]
    buffer = ChatMemoryBuffer(messages=source, token_limit=100)
    source.append(user("b"))
    buffer.put(user("c"))

    assert contents(buffer.get()) == ["a", "c"]


def test_reset_forgets_everything() -> None:
    buffer = ChatMemoryBuffer(messages=[user("a")], token_limit=100)
    buffer.reset()
    buffer.put(user("b"))

    assert contents(buffer.get()) == ["b"]
    assert contents(buffer.get_all()) == ["b"]


# --- Snapshots ---------------------------------------------------------------------------


def test_restore_after_appends_is_exact_and_get_still_windows_correctly() -> None:
    rng = random.Random(11)
    for _ in range(200):
        start, later, after = (random_messages(rng) for _ in range(3))
        buffer = ChatMemoryBuffer(messages=start, token_limit=rng.randint(0, 150))
        snapshot = buffer.snapshot()
        buffer.put_messages(later)

        buffer.restore(snapshot)

        assert buffer.get_all() == start
        assert buffer.get() == reference_get(start, buffer.token_limit)
        buffer.put_messages(after)
        assert buffer.get() == reference_get(start + after, buffer.token_limit)


def test_snapshot_taken_after_set_restores_the_new_history() -> None:
    buffer = ChatMemoryBuffer(messages=[user("old1"), user("old2"), user("old3")])
    buffer.set([user("new")])
    snapshot = buffer.snapshot()
    buffer.put(assistant("reply"))

    buffer.restore(snapshot)

    assert contents(buffer.get_all()) == ["new"]


def test_restore_of_a_full_snapshot_replaces_the_history() -> None:
    buffer = ChatMemoryBuffer(messages=[user("now")], token_limit=100)
    snapshot = MemorySnapshot(length=2, messages=[user("a"), assistant("b")])

    buffer.restore(snapshot)

    assert contents(buffer.get_all()) == ["a", "b"]
    assert contents(buffer.get()) == ["a", "b"]


@pytest.mark.parametrize("replacement", [[], [user("new")], [user(f"n{i}") for i in range(5)]])
def test_restore_after_set_brings_back_the_old_history(replacement: list[ChatMessage]) -> None:
    old = [user("old1"), assistant("old2"), user("old3")]
    buffer = ChatMemoryBuffer(messages=old, token_limit=1000)
    snapshot = buffer.snapshot()
    buffer.set(replacement)
    buffer.put(user("later"))

    buffer.restore(snapshot)

    assert buffer.get_all() == old
    assert buffer.get() == old


# --- Staging -----------------------------------------------------------------------------


def test_staged_writes_are_invisible_to_the_base_until_applied() -> None:
    base = ChatMemoryBuffer(messages=[user("q")], token_limit=1000)
    staged = base.staged()
    staged.put(assistant("a"))
    staged.put_messages([user("q2")])

    assert contents(base.get_all()) == ["q"]
    assert contents(base.get()) == ["q"]
    assert contents(staged.get_all()) == ["q", "a", "q2"]
    assert contents(staged.get()) == ["q", "a", "q2"]
    assert len(staged) == 3
    assert staged.changed

    snapshot = base.apply(staged)

    assert contents(base.get_all()) == ["q", "a", "q2"]
    assert snapshot == MemorySnapshot(length=1)
    base.restore(snapshot)
    assert contents(base.get_all()) == ["q"]


def test_unchanged_staged_view_applies_as_a_no_op() -> None:
    base = ChatMemoryBuffer(messages=[user("q")])
    staged = base.staged()

    assert not staged.changed
    assert base.apply(staged) == MemorySnapshot(length=1)
    assert contents(base.get_all()) == ["q"]


def test_two_staged_views_apply_in_order_and_undo_in_reverse() -> None:
    base = ChatMemoryBuffer(messages=[user("q")], token_limit=1000)
    first, second = base.staged(), base.staged()
    first.put(assistant("from first"))
    second.put(assistant("from second"))

    # Each view sees only its own writes.
    assert contents(first.get_all()) == ["q", "from first"]
    assert contents(second.get_all()) == ["q", "from second"]

    undo_first = base.apply(first)
    undo_second = base.apply(second)

    assert contents(base.get_all()) == ["q", "from first", "from second"]
    base.restore(undo_second)
    assert contents(base.get_all()) == ["q", "from first"]
    base.restore(undo_first)
    assert contents(base.get_all()) == ["q"]


def test_staged_set_replaces_history_at_apply_and_snapshot_keeps_the_old_one() -> None:
    old = [user("q"), assistant("a")]
    base = ChatMemoryBuffer(messages=old, token_limit=1000)
    staged = base.staged()
    staged.put(user("dropped by set"))
    staged.set([user("summary")])
    staged.put(assistant("after"))

    assert contents(staged.get_all()) == ["summary", "after"]
    assert len(staged) == 2
    assert base.get_all() == old

    snapshot = base.apply(staged)

    assert contents(base.get_all()) == ["summary", "after"]
    assert snapshot.messages == old
    assert snapshot.length == 2
    base.restore(snapshot)
    assert base.get_all() == old
    assert base.get() == old


def test_staged_reset_empties_history_at_apply() -> None:
    base = ChatMemoryBuffer(messages=[user("q"), assistant("a")])
    staged = base.staged()
    staged.reset()

    assert staged.get_all() == []
    assert staged.get() == []
    assert staged.changed
    assert len(base) == 2

    snapshot = base.apply(staged)

    assert base.get_all() == []
    base.restore(snapshot)
    assert contents(base.get_all()) == ["q", "a"]


def test_staged_get_matches_base_get_after_apply() -> None:
    rng = random.Random(5)
    checked = 0
    for _ in range(400):
        history, writes = random_messages(rng), random_messages(rng, rng.randint(0, 6))
        replace = random_messages(rng) if rng.random() < 0.25 else None
        limit = rng.randint(0, 200)
        for initial in (0, rng.randint(0, 40)):
            base = ChatMemoryBuffer(messages=history, token_limit=limit)
            staged = base.staged()
            if replace is not None:
                staged.set(replace)
            staged.put_messages(writes)
            seen = staged.get(initial_token_count=initial)

            base.apply(staged)

            assert seen == base.get(initial_token_count=initial)
            assert seen == reference_get(base.get_all(), limit - initial)
            checked += 1
    assert checked == 800


def test_staged_get_at_budget_boundaries_matches_reference() -> None:
    rng = random.Random(17)
    for _ in range(150):
        history, writes = random_messages(rng), random_messages(rng, rng.randint(1, 5))
        combined = history + writes
        for limit in interesting_budgets(combined, rng):
            base = ChatMemoryBuffer(messages=history, token_limit=limit)
            staged = base.staged()
            staged.put_messages(writes)
            assert staged.get() == reference_get(combined, limit), limit


def test_staged_view_cannot_be_staged_again() -> None:
    staged = ChatMemoryBuffer().staged()

    assert isinstance(staged, StagedMemory)
    with pytest.raises(TypeError, match="cannot be staged again"):
        staged.staged()


def test_snapshot_and_restore_on_a_staged_view() -> None:
    staged = ChatMemoryBuffer(messages=[user("q")]).staged()
    staged.put(assistant("a"))
    snapshot = staged.snapshot()
    staged.put(user("b"))

    staged.restore(snapshot)

    assert contents(staged.get_all()) == ["q", "a"]
    assert contents(staged.get()) == ["q", "a"]
    assert len(staged) == 2


def test_staged_restore_of_a_length_snapshot_drops_later_writes() -> None:
    base = ChatMemoryBuffer(messages=[user("q"), assistant("a")], token_limit=1000)
    staged = base.staged()
    staged.put_messages([user("q2"), assistant("a2")])

    staged.restore(MemorySnapshot(length=3))

    assert contents(staged.get_all()) == ["q", "a", "q2"]
    assert contents(base.get_all()) == ["q", "a"]
    base.apply(staged)
    assert contents(base.get_all()) == ["q", "a", "q2"]


def test_staged_restore_below_the_base_length_truncates_history_at_apply() -> None:
    base = ChatMemoryBuffer(messages=[user("q"), assistant("a"), user("q2")], token_limit=1000)
    staged = base.staged()
    staged.put(assistant("a2"))

    staged.restore(MemorySnapshot(length=1))

    assert contents(staged.get_all()) == ["q"]
    assert len(base) == 3
    snapshot = base.apply(staged)
    assert contents(base.get_all()) == ["q"]
    base.restore(snapshot)
    assert contents(base.get_all()) == ["q", "a", "q2"]


def test_staged_restore_after_set_truncates_the_replacement() -> None:
    base = ChatMemoryBuffer(messages=[user("q")], token_limit=1000)
    staged = base.staged()
    staged.set([user("s1"), assistant("s2"), user("s3")])

    staged.restore(MemorySnapshot(length=2))

    assert contents(staged.get_all()) == ["s1", "s2"]
    base.apply(staged)
    assert contents(base.get_all()) == ["s1", "s2"]


# --- Persistence -------------------------------------------------------------------------


def test_json_round_trip_keeps_messages_limit_and_windowing() -> None:
    rng = random.Random(23)
    messages = random_messages(rng, 12)
    buffer = ChatMemoryBuffer(messages=messages, token_limit=60)

    loaded = ChatMemoryBuffer.model_validate_json(buffer.model_dump_json())

    assert loaded.get_all() == messages
    assert loaded.token_limit == 60
    assert loaded.get() == buffer.get() == reference_get(messages, 60)
    loaded.put(user("more " * 10))
    assert loaded.get() == reference_get([*messages, user("more " * 10)], 60)


def test_staged_snapshot_restore_keeps_a_parallel_steps_commit() -> None:
    base = ChatMemoryBuffer(messages=[user("q")], token_limit=1000)
    first, second = base.staged(), base.staged()
    first.put(assistant("from first"))
    snapshot = second.snapshot()
    second.put(assistant("discarded"))
    second.restore(snapshot)
    second.put(assistant("from second"))

    base.apply(first)
    base.apply(second)

    assert contents(base.get_all()) == ["q", "from first", "from second"]
