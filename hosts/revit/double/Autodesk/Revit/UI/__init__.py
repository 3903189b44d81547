from revitdouble.ui import ExternalEvent, ExternalEventRequest, IExternalEventHandler, UIApplication, UIDocument  # noqa: F401
from revitdouble.dialogs import TaskDialog, TaskDialogCommonButtons, TaskDialogResult  # noqa: F401,E402
from . import Selection  # noqa: F401 - a namespace in Revit, as here
