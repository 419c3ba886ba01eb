import sys

from richardson_tc.cli import main

sys.exit(main())
