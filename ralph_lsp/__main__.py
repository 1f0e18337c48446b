from ralph_lsp.cli.main import main

raise SystemExit(main())
