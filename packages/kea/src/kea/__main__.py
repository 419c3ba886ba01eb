import sys

from kea.cli import main

sys.exit(main())
