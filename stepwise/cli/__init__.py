"""The `stepwise` command: the app (`ui`), the HTTP server (`serve`), services (`services`).

`stepwise ui` starts the app on your own agents and tools, `stepwise serve` serves the runtime
over HTTP, and `stepwise services up CONFIG` / `status` start and watch multi-agent services.
The entry point is `stepwise.cli.main:main`. It runs
from a source checkout or an editable install (`pip install -e .`): the app (`app.py`,
`pages/`, `components/`) is found beside this package.
"""

__all__: list[str] = []
