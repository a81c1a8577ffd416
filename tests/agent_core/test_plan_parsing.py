"""Plan parsing: what a model may reply, and the error a person sees when the plan is bad."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.errors import StepError
from agent_core.workers._plan import (
    MAX_PLAN_ITEMS,
    RAW_TEXT_MAX_CHARS,
    Plan,
    PlanError,
    PlanItem,
    parse_plan,
    topological_order,
    validate_plan,
)

AGENTS = {"researcher", "writer"}


def item(id: str, agent: str = "researcher", prompt: str = "do it", deps=()) -> dict[str, Any]:
    return {"id": id, "agent": agent, "prompt": prompt, "depends_on": list(deps)}


def plan_json(*items: dict[str, Any]) -> str:
    return json.dumps({"plan": list(items)})


VALID = plan_json(item("a"), item("b", "writer", "write it", deps=["a"]))


def ids(plan: Plan) -> list[str]:
    return [i.id for i in plan.plan]


# ------------------------------------------------------------------ accepted forms


@pytest.mark.parametrize(
    "text",
    [
        VALID,
        f"  \n{VALID}\n ",
        f"Here is the plan:\n```json\n{VALID}\n```\nLet me know.",
        f"```\n{VALID}\n```",
        f"Sure! {VALID} I hope {{this}} helps.",
        f"Use {{braces}} like {{x: 1}} freely. {VALID}",
        f'First some JSON {{"note": 1}} and then the plan {VALID}',
    ],
    ids=["bare", "padded", "json-fence", "plain-fence", "prose", "braces-in-prose", "two-objects"],
)
def test_a_plan_is_found_alone_fenced_or_in_prose(text):
    plan = parse_plan(text, agents=AGENTS)
    assert ids(plan) == ["a", "b"]
    assert plan.plan[1].depends_on == ["a"]
    assert plan.plan[1].agent == "writer"


def test_a_bare_list_of_items_is_a_plan():
    plan = parse_plan(json.dumps([item("a"), item("b")]), agents=AGENTS)
    assert ids(plan) == ["a", "b"]


def test_ids_are_trimmed_and_repeated_dependencies_count_once():
    text = plan_json(item(" a "), item("b", deps=["a", " a", "a"]))
    plan = parse_plan(text, agents=AGENTS)
    assert ids(plan) == ["a", "b"]
    assert plan.plan[1].depends_on == ["a"]


def test_keys_beside_the_plan_are_ignored():
    text = json.dumps({"reasoning": "split it", "plan": [item("a")]})
    assert ids(parse_plan(text, agents=AGENTS)) == ["a"]


def test_validate_plan_takes_parsed_json():
    plan = validate_plan({"plan": [item("a")]}, agents=AGENTS)
    assert ids(plan) == ["a"]


# ----------------------------------------------------------------- rejected plans


def problems_of(text: str, agents=AGENTS) -> PlanError:
    with pytest.raises(PlanError) as info:
        parse_plan(text, agents=agents)
    return info.value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"plan": [{"id": "a", "agent": "researcher",}]}', "the JSON is not valid"),
        ('Here: {"plan": [{"id": "a",, }]}', "the JSON is not valid"),
        ("I cannot make a plan for that.", "holds no JSON object"),
        ("", "empty"),
        ('{"steps": []}', 'no "plan" key (keys: steps)'),
        ('{"plan": []}', "no items"),
        ('{"plan": 3}', '"plan" must be a list of items, not a number'),
        ('"just a string"', "the JSON is a string"),
        (
            plan_json({"id": "a", "agent": "researcher"}),
            "plan[0] (item 'a'): missing field 'prompt'",
        ),
        (plan_json(item("a", prompt="  ")), "plan[0].prompt (item 'a'): is empty"),
        (plan_json(item("")), "plan[0].id: is empty"),
        (plan_json(item("x" * 65)), "longer than 64 characters"),
        (plan_json({**item("a"), "title": "t"}), "unknown field 'title'"),
        (plan_json({**item("a"), "depend_on": ["b"]}), "unknown field 'depend_on'"),
        (json.dumps({"plan": ["a", "b"]}), "plan[0]: expected an object"),
        (plan_json({**item("a"), "depends_on": "b"}), "plan[0].depends_on (item 'a')"),
        (plan_json(item("a"), item("a")), "item ids must be unique; repeated: a"),
        (
            plan_json(item("a", agent="painter")),
            "item 'a' names unknown agent 'painter'; agents: researcher, writer",
        ),
        (plan_json(item("a", deps=["ghost"])), "item 'a' depends on 'ghost', which is not in"),
        (plan_json(item("a", deps=["a"])), "item 'a' depends on itself"),
        (
            plan_json(item("a", deps=["c"]), item("b", deps=["a"]), item("c", deps=["b"])),
            "the dependencies form a cycle: a -> c -> b -> a",
        ),
        (
            plan_json(*(item(str(i)) for i in range(MAX_PLAN_ITEMS + 1))),
            f"the plan has {MAX_PLAN_ITEMS + 1} items; at most {MAX_PLAN_ITEMS}",
        ),
    ],
    ids=[
        "trailing-comma",
        "broken-in-prose",
        "no-json",
        "empty",
        "no-plan-key",
        "empty-plan",
        "plan-not-list",
        "json-string",
        "missing-prompt",
        "blank-prompt",
        "blank-id",
        "long-id",
        "unknown-field",
        "misspelt-depends-on",
        "item-not-object",
        "depends-on-not-list",
        "duplicate-ids",
        "unknown-agent",
        "dangling-dependency",
        "self-dependency",
        "cycle",
        "too-many-items",
    ],
)
def test_each_invalid_plan_is_a_plan_error_naming_the_problem(text, expected):
    error = problems_of(text)
    assert any(expected in problem for problem in error.problems), error.problems
    assert expected in str(error)
    assert error.raw_text == text
    assert text in str(error)  # The person sees exactly what the model wrote.
    assert "edit the plan step's input with a corrected plan JSON" in str(error)


def test_every_problem_of_a_plan_is_reported_at_once():
    text = plan_json(item("a", agent="painter"), item("b", deps=["ghost", "b"]))
    error = problems_of(text)
    assert len(error.problems) == 3
    assert "painter" in str(error) and "ghost" in str(error) and "itself" in str(error)


def test_a_plan_error_is_a_step_error():
    assert issubclass(PlanError, StepError)


def test_a_long_reply_is_quoted_only_in_part():
    text = "No plan here. " + "blah " * 2_000
    error = problems_of(text)
    assert error.raw_text == text
    message = str(error)
    assert text[:RAW_TEXT_MAX_CHARS] in message
    assert text not in message
    assert f"{len(text) - RAW_TEXT_MAX_CHARS:,} more characters" in message


def test_absurdly_nested_json_is_a_plan_error():
    error = problems_of("[" * 100_000)
    assert "nested too deeply" in str(error)


def test_no_known_agents_says_so():
    error = problems_of(plan_json(item("a")), agents=set())
    assert "agents: none" in str(error)


# ------------------------------------------------------------- topological order


def test_topological_order_puts_dependencies_first_and_keeps_the_rest_in_order():
    plan = parse_plan(
        plan_json(item("c", deps=["b"]), item("a"), item("b", deps=["a"]), item("d")),
        agents=AGENTS,
    )
    assert [i.id for i in topological_order(plan)] == ["a", "d", "b", "c"]


def test_topological_order_of_an_unchecked_plan_with_a_cycle_is_a_plan_error():
    plan = Plan(
        plan=[
            PlanItem(id="a", agent="x", prompt="p", depends_on=["b"]),
            PlanItem(id="b", agent="x", prompt="p", depends_on=["a"]),
        ]
    )
    with pytest.raises(PlanError, match="cycle: a -> b -> a"):
        topological_order(plan)


def test_topological_order_of_an_unchecked_plan_with_a_dangling_id_is_a_plan_error():
    plan = Plan(plan=[PlanItem(id="a", agent="x", prompt="p", depends_on=["zz"])])
    with pytest.raises(PlanError, match="zz"):
        topological_order(plan)


# ------------------------------------------------------------------- properties


def _never_raises_anything_else(text: str) -> None:
    try:
        plan = parse_plan(text, agents=AGENTS)
    except PlanError as exc:
        assert exc.problems and exc.raw_text == text
    else:
        assert isinstance(plan, Plan)
        assert len(topological_order(plan)) == len(plan.plan)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_gives_a_plan_or_a_plan_error(text):
    _never_raises_anything_else(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["plan", "id", "agent", "prompt", "depends_on", "x"])
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["{}", "```json\n{}\n```", "Plan: {} ok", "{}}{"]))
def test_any_json_in_any_wrapping_gives_a_plan_or_a_plan_error(value, wrapping):
    text = wrapping.replace("{}", json.dumps(value), 1)
    _never_raises_anything_else(text)


@st.composite
def dag_plans(draw) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=1, max_value=MAX_PLAN_ITEMS))
    names = [f"i{n}" for n in range(count)]
    items = []
    for n, name in enumerate(names):
        deps = draw(st.lists(st.sampled_from(names[:n]), unique=True)) if n else []
        agent = draw(st.sampled_from(sorted(AGENTS)))
        items.append(item(name, agent, f"prompt {n}", deps=deps))
    return draw(st.permutations(items))


@settings(max_examples=150, deadline=None)
@given(dag_plans())
def test_any_acyclic_plan_parses_and_orders_each_item_after_its_dependencies(items):
    plan = parse_plan(plan_json(*items), agents=AGENTS)
    assert [i.model_dump() for i in plan.plan] == items
    seen: set[str] = set()
    for planned in topological_order(plan):
        assert set(planned.depends_on) <= seen
        seen.add(planned.id)


@settings(max_examples=150, deadline=None)
@given(dag_plans().filter(lambda items: len(items) >= 2), st.data())
def test_closing_a_loop_in_any_plan_is_reported_as_a_cycle(items, data):
    # Make the item that others (transitively) depend on depend on one of its dependents.
    by_id = {i["id"]: i for i in items}
    dependent = data.draw(st.sampled_from([i for i in items if i["depends_on"]] or [None]))
    if dependent is None:
        first, second = items[0], items[1]
        first["depends_on"], second["depends_on"] = [second["id"]], [first["id"]]
    else:
        by_id[dependent["depends_on"][0]]["depends_on"].append(dependent["id"])
    error = problems_of(plan_json(*items))
    assert any("cycle" in p for p in error.problems)
