import sys

from k2ie.cli import main

sys.exit(main())
