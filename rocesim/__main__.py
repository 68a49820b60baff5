import sys

from rocesim.cli import main

sys.exit(main())
