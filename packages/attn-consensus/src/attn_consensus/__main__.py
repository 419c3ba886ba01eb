import sys

from attn_consensus.cli import main

sys.exit(main())
