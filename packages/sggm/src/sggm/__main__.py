import sys

from sggm.cli import main

sys.exit(main())
