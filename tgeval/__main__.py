import sys

from tgeval.cli.program import main

sys.exit(main())
