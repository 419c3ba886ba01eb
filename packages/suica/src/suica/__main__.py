import sys

from suica.cli import main

sys.exit(main())
