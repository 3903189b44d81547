"""Dialogs Revit shows, and the event an add-in answers them with.

UIApplication.DialogBoxShowing "is raised when Revit is just about to show a
dialog box or a message box"; the argument is a DialogBoxShowingEventArgs, a
MessageBoxShowingEventArgs for a message box, a TaskDialogShowingEventArgs
for a task dialog; a handler dismisses the dialog with OverrideResult and the
code it returns (https://www.revitapidocs.com/2026/cb46ea4c-2b80-0ec2-063f-dda6f662948a.htm,
https://www.revitapidocs.com/2024/96cc0900-708b-5a2c-8d07-b2596ec20700.htm).
The double shows a task dialog where a script calls TaskDialog.Show; its
DialogId is TaskDialog.Id, "empty string for default TaskDialog.Show()"
(https://apidocs.co/apps/revit/2026/7311c9d6-f223-f4c2-0b7a-197e42e5ee61.htm,
https://apidocs.co/apps/revit/2025/4f0c2d64-6d66-2c88-828a-68dc6b10c4d6.htm).

A dialog nobody answers holds Revit until a person clicks. The double
cannot wait for a person: it records the dialog in Session._unanswered and
goes on as if the person had pressed the default button, so a test can hold
an add-in to never leaving one."""
import enum

from .errors import ArgumentException, require
from .netenum import NetEnum

# TaskDialogResult: "None" is a .NET name Python cannot spell as an attribute;
# pythonnet reaches it as getattr(TaskDialogResult, "None").
TaskDialogResult = NetEnum("TaskDialogResult", [
    ("None", 0), ("Ok", 1), ("Cancel", 2), ("Retry", 4), ("Yes", 6), ("No", 7), ("Close", 8),
    ("CommandLink1", 1001), ("CommandLink2", 1002), ("CommandLink3", 1003), ("CommandLink4", 1004)])


class TaskDialogCommonButtons(enum.IntFlag):
    """The buttons a task dialog shows."""
    Ok = 1
    Yes = 2
    No = 4
    Cancel = 8
    Retry = 16
    Close = 32


_RESULT_OF_BUTTON = ((TaskDialogCommonButtons.Ok, 1), (TaskDialogCommonButtons.Yes, 6), (TaskDialogCommonButtons.No, 7),
                     (TaskDialogCommonButtons.Cancel, 2), (TaskDialogCommonButtons.Retry, 4),
                     (TaskDialogCommonButtons.Close, 8))


class DialogBoxShowingEventArgs:
    """https://www.revitapidocs.com/2017/8b6b969f-45d2-5b90-ca6d-593348ddf8d4.htm: "The
    OverrideResult function can be used to cause the dialog to be dismissed
    and return a desired result code"; the event is not cancellable."""

    def __init__(self, dialog_id):
        self._dialog_id = str(dialog_id or "")
        self._result = None

    DialogId = property(lambda self: self._dialog_id)
    Cancellable = property(lambda self: False)
    IsValidObject = property(lambda self: True)

    def OverrideResult(self, resultCode):
        if isinstance(resultCode, bool) or not isinstance(resultCode, int):
            raise ArgumentException("resultCode must be an integer result code")
        self._result = int(resultCode)
        return True

    def Cancel(self):
        from .errors import InvalidOperationException
        raise InvalidOperationException("The event is not cancellable.")

    def Dispose(self):
        pass


class TaskDialogShowingEventArgs(DialogBoxShowingEventArgs):
    """A task dialog: its message besides the DialogId."""

    def __init__(self, dialog_id, message):
        super().__init__(dialog_id)
        self._message = str(message or "")

    Message = property(lambda self: self._message)


class MessageBoxShowingEventArgs(DialogBoxShowingEventArgs):
    """A standard message box: its message and DialogType (the Windows
    MB_ flags); DialogId is empty."""

    def __init__(self, message, dialog_type=0):
        super().__init__("")
        self._message, self._type = str(message or ""), int(dialog_type)

    Message = property(lambda self: self._message)
    DialogType = property(lambda self: self._type)


def _show(args, title, default):
    """Raises DialogBoxShowing for a dialog about to show; answers the code
    a handler overrode it with, or the default when nobody answered (the
    double's stand-in for the person)."""
    from .ui import Session
    session = Session.current
    if session is None:
        return default
    session.uiapp.DialogBoxShowing.fire(session.uiapp, args)
    if args._result is not None:
        return args._result
    session._unanswered.append((title, getattr(args, "Message", ""), args.DialogId))
    return default


class TaskDialog:
    """Autodesk.Revit.UI.TaskDialog: Show(title, mainInstruction[, buttons[,
    defaultButton]]) shows a modal dialog and answers the button pressed;
    its Id becomes the DialogId of the DialogBoxShowing it raises."""

    def __init__(self, title):
        self._title = str(require(title, "title"))
        self.Id = ""
        self.MainInstruction = ""
        self.MainContent = ""
        self.CommonButtons = TaskDialogCommonButtons.Close
        self.DefaultButton = TaskDialogResult["None"]

    Title = property(lambda self: self._title)


def _default(buttons, default_button):
    if int(default_button):
        return int(default_button)
    for flag, result in _RESULT_OF_BUTTON:
        if buttons & flag:
            return result
    return 8


def _instance_show(self):
    message = "\n".join(x for x in (self.MainInstruction, self.MainContent) if x)
    code = _show(TaskDialogShowingEventArgs(self.Id, message), self._title, _default(self.CommonButtons, self.DefaultButton))
    try:
        return TaskDialogResult(code)
    except ValueError:
        return code


def _static_show(title, mainInstruction, buttons=TaskDialogCommonButtons.Close, defaultButton=None):
    require(title, "title")
    require(mainInstruction, "mainInstruction")
    d = TaskDialog(title)
    d.MainInstruction = str(mainInstruction)
    d.CommonButtons = TaskDialogCommonButtons(int(buttons))
    if defaultButton is not None:
        d.DefaultButton = TaskDialogResult(int(defaultButton))
    return _instance_show(d)


def _show_either(self, *args):
    """TaskDialog.Show as .NET has it: static Show(title, mainInstruction[,
    buttons[, defaultButton]]) on the class, Show() on an instance. Python
    has one attribute for both: called on the class, self is the title."""
    if isinstance(self, TaskDialog):
        if args:
            raise TypeError("TaskDialog.Show() on an instance takes no arguments")
        return _instance_show(self)
    if not 1 <= len(args) <= 3:
        raise TypeError("TaskDialog.Show takes a title and a main instruction, then buttons and a default button")
    return _static_show(self, *args)


TaskDialog.Show = _show_either
