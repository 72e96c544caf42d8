"""`python -m prism_code.lsp`: the language server on stdio."""

import sys

from prism_code.lsp.app import main

sys.exit(main())
