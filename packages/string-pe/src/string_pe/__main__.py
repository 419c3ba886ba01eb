import sys

from string_pe.cli import main

sys.exit(main())
