from revitdouble.ui import IdlingEventArgs  # noqa: F401
from revitdouble.dialogs import (DialogBoxShowingEventArgs, MessageBoxShowingEventArgs,  # noqa: F401
                                 TaskDialogShowingEventArgs)
