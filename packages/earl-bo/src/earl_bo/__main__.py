import sys

from earl_bo.cli import main

sys.exit(main())
