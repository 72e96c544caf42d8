"""`python -m server`: the language server on stdio."""

import sys

from server.app import main

sys.exit(main())
