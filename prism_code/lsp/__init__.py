"""prism-code's language server: a thin LSP adapter over prism_code.

The server imports the library; nothing else in prism_code imports the server, except
`prism-code serve` (prism_code/cli.py), which imports it inside the command. Run it with
`python -m prism_code.lsp` or `prism-code serve` (stdio).
"""
