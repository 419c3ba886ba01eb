import sys

from lift.cli import main

sys.exit(main())
