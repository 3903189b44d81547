from revitdouble.rooms import Room  # noqa: F401
