from revitdouble.structure import *  # noqa: F401,F403
