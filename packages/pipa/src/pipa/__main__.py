import sys

from pipa.cli import main

sys.exit(main())
