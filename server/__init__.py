"""prism-code's language server: a thin LSP adapter over prism_code.

The server imports the library; the library never imports the server. Run it with
`python -m server` or `prism-code serve` (stdio).
"""
