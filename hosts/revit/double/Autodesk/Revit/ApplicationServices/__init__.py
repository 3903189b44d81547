from revitdouble.document import Application  # noqa: F401
