import sys

from tgeval.cli import main

sys.exit(main())
