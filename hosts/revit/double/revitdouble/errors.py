"""The Revit API's exceptions (namespace Autodesk.Revit.Exceptions), as the
double raises them. Under pythonnet a .NET exception reaches Python with its
own class name, so a script, and the add-in's error report, see the same
names here as in Revit."""


class ApplicationException(Exception):
    """The base of the exceptions the Revit API throws (the hierarchy on the
    ModificationOutsideTransactionException page below)."""


class InvalidOperationException(ApplicationException):
    pass


class ModificationOutsideTransactionException(InvalidOperationException):
    """Thrown "by the undo transaction framework when the modification
    operation to the model is outside of a transaction"
    (https://www.revitapidocs.com/2024/8f025460-c283-ea99-aa8a-5a36e11528f4.htm)."""


class ModificationForbiddenException(InvalidOperationException):
    """Thrown when a modification is not allowed
    (https://www.revitapidocs.com/2017/53205486-5917-7c33-8e67-e362106ddc97.htm):
    the double raises it while the document is closed to changes (its
    DocumentChanged handlers run; Revit calls that event read-only)."""


class InvalidObjectException(InvalidOperationException):
    """An element used after it was deleted or its creation was undone."""


class ArgumentException(ApplicationException):
    pass


class ArgumentNullException(ArgumentException):
    pass


class ArgumentOutOfRangeException(ArgumentException):
    pass


class ArgumentsInconsistentException(ArgumentException):
    pass


OUTSIDE_TRANSACTION = "Attempt to modify the model outside of transaction."
INVALID_OBJECT = ("The referenced object is not valid, possibly because it has been deleted from the database, "
                  "or its creation was undone.")


def require(value, name):
    """ArgumentNullException for a null non-optional argument, as every
    Revit API member documents ("A non-optional argument was null")."""
    if value is None:
        raise ArgumentNullException("A non-optional argument was null: %s" % name)
    return value
