from ralph_lsp.cli import main

raise SystemExit(main())
