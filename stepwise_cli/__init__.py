"""The `stepwise` command: `stepwise ui` starts the app on your own agents and tools.

The entry point is `stepwise_cli.main:main` (`serve` and `services` are to come). It runs
from a source checkout or an editable install (`pip install -e .`): the app (`app.py`,
`pages/`, `components/`) is found beside this package.
"""

__all__: list[str] = []
