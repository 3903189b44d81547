from revitdouble.ui import (ExternalEvent, ExternalEventRequest, IExternalEventHandler, Selection,  # noqa: F401
                            UIApplication, UIDocument)
