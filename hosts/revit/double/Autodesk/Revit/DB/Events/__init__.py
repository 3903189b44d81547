from revitdouble.document import DocumentChangedEventArgs, UndoOperation  # noqa: F401
