"""prism-code: a local, private code assistant library.

The language server is prism_code.lsp; nothing else here imports it but `prism-code serve`.
"""

__version__ = "0.1.0"
