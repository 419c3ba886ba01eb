import sys

from icml25.cli import main

sys.exit(main())
