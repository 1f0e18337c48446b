from ralph_lsp.server import serve

serve()
