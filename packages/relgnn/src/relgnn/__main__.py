import sys

from relgnn.cli import main

sys.exit(main())
