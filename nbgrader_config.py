"""nbgrader's configuration where its quick start looks for it: the course root, where nbgrader's commands and
formgrader are started. The course's settings live in autograder/nbgrader_config.py (one definition); this file
only loads them, so `nbgrader export`, `nbgrader release_feedback` and formgrader started here find autograder/.
"""
import os

c = get_config()  # noqa: F821 - injected by traitlets when nbgrader loads this file
load_subconfig("nbgrader_config.py", path=os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograder"))  # noqa: F821
