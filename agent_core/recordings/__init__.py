"""What a run recorded, as data: cases (`stepwise.case/1`), and their replay on new code.

A case is a task's recording plus expectations, in a file a user commits
(`stepwise_cases/NAME.case.json`). `case_from_task` makes one from a stored task,
`save_case` / `load_case` write and read it, and `replay_case` runs it on the current code
of its agent with the model answered from the recording: the first request or tool result
that differs is the divergence.

```python
from agent_core.recordings import case_from_task, load_case, replay_case, save_case

path = save_case(case_from_task(runner, task_id, name="adds"))
result = replay_case(load_case(path))
assert result.passed, result.report()
```
"""

from agent_core.recordings.cases import (
    CASE_FORMAT,
    DEFAULT_CASES_DIR,
    Case,
    CaseStep,
    HumanAct,
    load_case,
    save_case,
)
from agent_core.recordings.compare import Comparison, FirstDifference, RunRef, compare
from agent_core.recordings.errors import (
    CaseCheckError,
    CaseFileError,
    ReplayDivergedError,
    ReplayUnsupportedError,
)
from agent_core.recordings.expectations import Expectations, ExpectedCall, Outcome
from agent_core.recordings.from_task import case_from_task
from agent_core.recordings.replay import CaseResult, replay_case
from agent_core.recordings.stand_ins import Divergence

__all__ = [
    "CASE_FORMAT",
    "DEFAULT_CASES_DIR",
    "Case",
    "CaseCheckError",
    "CaseFileError",
    "CaseResult",
    "CaseStep",
    "Comparison",
    "Divergence",
    "Expectations",
    "ExpectedCall",
    "FirstDifference",
    "HumanAct",
    "Outcome",
    "ReplayDivergedError",
    "ReplayUnsupportedError",
    "RunRef",
    "case_from_task",
    "compare",
    "load_case",
    "replay_case",
    "save_case",
]
