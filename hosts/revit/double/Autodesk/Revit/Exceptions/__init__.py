from revitdouble.errors import (ApplicationException, ArgumentException, ArgumentNullException,  # noqa: F401
                                ArgumentOutOfRangeException, ArgumentsInconsistentException,
                                InvalidObjectException, InvalidOperationException, ModificationForbiddenException,
                                ModificationOutsideTransactionException)
