import sys

from habi.cli import main

sys.exit(main())
