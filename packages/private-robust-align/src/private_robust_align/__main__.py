import sys

from private_robust_align.cli import main

sys.exit(main())
