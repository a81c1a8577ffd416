"""Services: watch and steer multi-agent services (`stepwise.services`) through a control plane.

The page ships in the package (`stepwise.app.views.services`); this file runs it for `make run`.
"""

from stepwise.app.views.services import render

render()
