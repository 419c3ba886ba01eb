import sys

from lcia.cli import main

sys.exit(main())
