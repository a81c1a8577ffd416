"""Runs recorded elsewhere, opened as tasks: OTLP JSON, Langfuse, LangSmith, Stepwise traces.

`import_file` reads a file and stores one read-only task per trace in it: the question, one
model step per model call (the messages it was sent, its reply, usage), one tool step per
tool call, in the recorded order; spans that are neither become notes. A file is data: nothing
it names is run, imported or fetched. Fork any step with an agent of yours
(`AgentRunner.fork_task(task_id, step_id, agent=spec)`) to go on live from there.

```python
from agent_core.recordings.importers import import_file

task_ids = import_file("traces.jsonl", store)        # the Collector's file exporter output
```
"""

from agent_core.recordings.importers._reading import MAX_IMPORT_BYTES
from agent_core.recordings.importers.errors import TraceImportError
from agent_core.recordings.importers.files import (
    IMPORT_FORMATS,
    ImportFormat,
    detect,
    import_file,
    read_runs,
)
from agent_core.recordings.importers.otlp import MAX_SPANS
from agent_core.recordings.importers.recorded import (
    RecordedModelCall,
    RecordedNote,
    RecordedRun,
    RecordedToolCall,
)
from agent_core.recordings.importers.to_task import task_state_of

__all__ = [
    "IMPORT_FORMATS",
    "MAX_IMPORT_BYTES",
    "MAX_SPANS",
    "ImportFormat",
    "RecordedModelCall",
    "RecordedNote",
    "RecordedRun",
    "RecordedToolCall",
    "TraceImportError",
    "detect",
    "import_file",
    "read_runs",
    "task_state_of",
]
