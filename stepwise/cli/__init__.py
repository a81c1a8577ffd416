"""The `stepwise` command: the app (`ui`), the HTTP server (`serve`), services (`services`).

`stepwise ui` starts the app on your own agents and tools, `stepwise serve` serves the runtime
over HTTP, and `stepwise services up CONFIG` / `status` start and watch multi-agent services.
The entry point is `stepwise.cli.main:main`. The app ships in the package (`stepwise.app`):
`pip install "stepwise[app]"` in any venv gives a working `stepwise ui`.
"""

__all__: list[str] = []
