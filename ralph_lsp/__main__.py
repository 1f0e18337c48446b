from ralph_lsp import main

raise SystemExit(main())
