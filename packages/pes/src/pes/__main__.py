import sys

from pes.cli import main

sys.exit(main())
