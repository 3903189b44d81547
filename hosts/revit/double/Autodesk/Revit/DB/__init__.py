from revitdouble.db import *  # noqa: F401,F403 - the namespace is the double's DB surface
