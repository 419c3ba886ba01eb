import sys

from focoop.cli import main

sys.exit(main())
