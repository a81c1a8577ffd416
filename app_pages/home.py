"""Start: what Stepwise is, in two lines, and a link to each page.

The page ships in the package (`stepwise.app.views.home`); this file runs it for `make run`.
"""

from stepwise.app.views.home import render

render()
