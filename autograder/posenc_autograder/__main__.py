import sys

from posenc_autograder.cli import main

sys.exit(main())
