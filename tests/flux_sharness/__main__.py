import sys

from tests.flux_sharness.runner import main

sys.exit(main())
