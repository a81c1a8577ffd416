"""Tasks: every task in the store, to open, delete, export as a trace, or import one.

The page ships in the package (`stepwise.app.views.tasks`); this file runs it for `make run`.
"""

from stepwise.app.views.tasks import render

render()
