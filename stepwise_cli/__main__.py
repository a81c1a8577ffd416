"""`python -m stepwise_cli`: the same as the `stepwise` command."""

from stepwise_cli.main import main

raise SystemExit(main())
