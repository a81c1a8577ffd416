"""What replaying a saved case costs beside the agent's own code (issue 29's goal: <= 1.2x).

One 20-step ReAct case (the built-in `ReActAgentWorker` with the calculator tool, a scripted
model making 19 tool calls and then answering) is measured three ways in one process:

- **own**: the agent's own code as users run it: a runner on an in-memory store,
  `create_task`, `run_until`, `finalize_response`, on a `ScriptedLLM` (no network);
- **replay**: `replay_case` of the saved case (the model answered from the recording, every
  request and tool result compared, the expectations judged), run from this repository, so
  its user-code registry reads a large pyproject.toml; and again with one registry reused
  (`registry=`), as `stepwise test` replays its cases;
- **stepwise test**: 100 saved cases through the `stepwise test` code path in this process
  (`run_test`), reported as seconds per case beyond the agent's own time (the own run timed
  as many times just before and just after, so both see the same spell of the machine).

Own and replay take turns, ROUNDS times, so a slow spell of this shared machine lands on both;
each reports its median. Results go to bench/results/replay_speed.json.

    .venv/bin/python -m bench.replay_speed [--steps 20] [--rounds 30] [--cases 100]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_core.llms import ScriptedLLM
from agent_core.recordings import Case, case_from_task, replay_case, save_case
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.spec import AgentSpec
from agent_core.store import InMemoryStore
from agent_core.tools import calculator_tool
from agent_core.user_code import UserCodeRegistry
from agent_core.workers import ReActAgentWorker
from stepwise.cli.cases import run_test
from stepwise.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "replay_speed.json"
GOAL_RATIO = 1.2
GOAL_EXTRA_S_PER_CASE = 1.0
QUESTION = "Add one to 1 nineteen times over, with the calculator."


def _script(steps: int) -> list[str]:
    """A ReAct script: `steps - 1` calculator calls, each on the last result, then the answer."""
    replies = []
    for n in range(1, steps):
        replies.append(
            f"Thought: I add one more.\nAction: calculator\n"
            f'Action Input: {{"expression": "{n} + 1"}}'
        )
    replies.append(f"Thought: I can answer without using any more tools.\nAnswer: {steps}")
    return replies


def _spec(steps: int) -> AgentSpec:
    return AgentSpec(worker="react", tools=("calculator",), max_iterations=steps + 5)


def run_own(steps: int) -> ParallelAgentRunner:
    """The agent's own code on a scripted model, as a user runs it; its runner."""
    llm = ScriptedLLM(_script(steps))
    worker = ReActAgentWorker([calculator_tool()], llm, max_iterations=steps + 5)
    runner = ParallelAgentRunner(
        worker,
        store=InMemoryStore(),
        conversation_id=None,
        spec=_spec(steps).model_dump(mode="json"),
    )
    task_id = runner.create_task(QUESTION).task_id
    done = runner.run_until(task_id)
    runner.finalize_response(task_id)
    assert done.reason == "last_step" and llm.exhausted, done
    return runner


def record_case(steps: int) -> Case:
    """The case of one run of the agent's own code."""
    runner = run_own(steps)
    task_id = runner.list_tasks()[0].task_id
    case = case_from_task(runner, task_id, name="count-up")
    assert len(case.steps) == steps, len(case.steps)
    return case


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _replay(case: Case, registry: UserCodeRegistry | None = None) -> None:
    result = replay_case(case, registry=registry)
    assert result.passed, result.report()


def side_by_side(case: Case, *, steps: int, rounds: int) -> dict[str, Any]:
    """Median milliseconds of the agent's own run and of the case's replay, taking turns."""
    registry = UserCodeRegistry(project=Path.cwd())
    run_own(steps), _replay(case), _replay(case, registry)  # Warm-up: imports, first calls.
    own: list[float] = []
    replay: list[float] = []
    reused: list[float] = []
    for _ in range(rounds):
        own.append(_timed(lambda: run_own(steps)) * 1e3)
        replay.append(_timed(lambda: _replay(case)) * 1e3)
        reused.append(_timed(lambda: _replay(case, registry)) * 1e3)
    own_ms, replay_ms = statistics.median(own), statistics.median(replay)
    reused_ms = statistics.median(reused)
    return {
        "own_ms": own_ms,
        "replay_ms": replay_ms,
        "ratio": replay_ms / own_ms,
        "replay_registry_reused_ms": reused_ms,
        "ratio_registry_reused": reused_ms / own_ms,
        "own_samples_ms": own,
        "replay_samples_ms": replay,
        "replay_registry_reused_samples_ms": reused,
    }


def _own_total(steps: int, count: int) -> float:
    return sum(_timed(lambda: run_own(steps)) for _ in range(count))


def many_cases(case: Case, *, steps: int, count: int) -> dict[str, Any]:
    """`stepwise test` over `count` saved cases, in this process, from an empty project."""
    with tempfile.TemporaryDirectory() as folder:
        cases = Path(folder) / "stepwise_cases"
        for n in range(count):
            save_case(case.model_copy(update={"name": f"count-up-{n:03d}"}), cases)
        args = build_parser().parse_args(["test", str(cases)])
        report = io.StringIO()
        here = Path.cwd()
        os.chdir(folder)  # `stepwise test` reads the project it is run from.
        try:
            own = _own_total(steps, count)
            started = time.perf_counter()
            status = run_test(args, out=report)
            elapsed = time.perf_counter() - started
            own = (own + _own_total(steps, count)) / 2
        finally:
            os.chdir(here)
    assert status == 0, report.getvalue()
    return {
        "cases": count,
        "total_s": elapsed,
        "own_total_s": own,
        "s_per_case": elapsed / count,
        "extra_s_per_case": (elapsed - own) / count,
        "ratio": elapsed / own,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cases", type=int, default=100)
    options = parser.parse_args()
    case = record_case(options.steps)
    pair = side_by_side(case, steps=options.steps, rounds=options.rounds)
    suite = many_cases(case, steps=options.steps, count=options.cases)
    print(f"Replaying a {options.steps}-step ReAct case, median of {options.rounds} rounds")
    print(f"  {'agent own code (run_until)':<34} {pair['own_ms']:8.2f} ms")
    print(
        f"  {'replay_case':<34} {pair['replay_ms']:8.2f} ms   "
        f"ratio {pair['ratio']:.2f}x (goal <= {GOAL_RATIO}x)"
    )
    print(
        f"  {'replay_case, registry reused':<34} {pair['replay_registry_reused_ms']:8.2f} ms   "
        f"ratio {pair['ratio_registry_reused']:.2f}x"
    )
    label = f"stepwise test, {suite['cases']} cases"
    print(
        f"  {label:<34} {suite['total_s']:8.2f} s    "
        f"{suite['extra_s_per_case'] * 1e3:.2f} ms/case beyond own, ratio {suite['ratio']:.2f}x "
        f"(goal < {GOAL_EXTRA_S_PER_CASE:.0f} s/case)"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine()}
    figures = {"steps": options.steps, "rounds": options.rounds, "machine": machine}
    RESULTS.write_text(json.dumps({**figures, **pair, "stepwise_test": suite}, indent=2) + "\n")


if __name__ == "__main__":
    main()
