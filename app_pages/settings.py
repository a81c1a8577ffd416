"""Settings: the model provider, the model, keys for this session only, and prices.

The page ships in the package (`stepwise.app.views.settings`); this file runs it for `make run`.
"""

from stepwise.app.views.settings import render

render()
