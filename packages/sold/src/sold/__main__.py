import sys

from sold.cli import main

sys.exit(main())
