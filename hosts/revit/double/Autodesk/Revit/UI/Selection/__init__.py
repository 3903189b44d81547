from revitdouble.ui import Selection  # noqa: F401
