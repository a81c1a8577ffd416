"""What a framework's agent pays for being stepped in Stepwise (issue 21's goal: <= 1.2x).

For each adapter (pydantic-ai, the OpenAI Agents SDK, LangGraph), `bench/adapter_<name>.py`
runs the same agent on the same offline scripted model twice in one process: by the framework
alone (its own run loop), and through Stepwise's `AgentRunner` one step at a time with default
options (an in-memory store, undo snapshots, the adapter's JSON state). Each reports
milliseconds per step; the ratio is Stepwise's over the framework's. A framework that is not
installed, or whose bench fails, is reported as such and the others still run.

Results go to bench/results/adapters_speed.json. `python -m bench.adapters_speed --steps N`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "adapters_speed.json"
ADAPTERS = ("pydantic_ai", "openai_agents", "langgraph")
GOAL = 1.2


def _measure(name: str, steps: int) -> dict[str, Any]:
    try:
        module = importlib.import_module(f"bench.adapter_{name}")
        figures = dict(module.run(steps=steps))
    except Exception as exc:  # One framework's failure must not hide the others' figures.
        return {"framework": name, "error": "".join(traceback.format_exception_only(exc))}
    figures["ratio"] = figures["stepwise_ms_per_step"] / figures["framework_ms_per_step"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    steps = parser.parse_args().steps
    rows = [_measure(name, steps) for name in ADAPTERS]
    print(f"Per-step cost of each adapter, {steps} steps, goal <= {GOAL}x the framework alone")
    for row in rows:
        if "error" in row:
            print(f"  {row['framework']:<14} failed: {row['error'].strip()}")
            continue
        print(
            f"  {row['framework']:<14} framework {row['framework_ms_per_step']:7.2f} ms/step"
            f"   stepwise {row['stepwise_ms_per_step']:7.2f} ms/step   ratio {row['ratio']:.2f}x"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine()}
    RESULTS.write_text(json.dumps({"steps": steps, "machine": machine, "adapters": rows}, indent=2))


if __name__ == "__main__":
    main()
