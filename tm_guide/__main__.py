import sys

from tm_guide.cli import main

sys.exit(main())
