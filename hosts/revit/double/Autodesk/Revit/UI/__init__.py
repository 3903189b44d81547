from revitdouble.ui import (ExternalEvent, ExternalEventRequest, IExternalEventHandler, Selection,  # noqa: F401
                            UIApplication, UIDocument)
from revitdouble.dialogs import TaskDialog, TaskDialogCommonButtons, TaskDialogResult  # noqa: F401,E402
