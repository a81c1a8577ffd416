"""`python -m stepwise.cli`: the same as the `stepwise` command."""

from stepwise.cli.main import main

raise SystemExit(main())
