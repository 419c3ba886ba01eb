import sys

from safediffcon.cli import main

sys.exit(main())
