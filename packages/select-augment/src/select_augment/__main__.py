import sys

from select_augment.cli import main

sys.exit(main())
