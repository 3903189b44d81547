"""Dialogs never hold Revit: while a script runs, the add-in answers
UIApplication.DialogBoxShowing, which Revit raises "when Revit is just about
to show a dialog box or a message box", by overriding the dialog's result
(OverrideResult) so it is dismissed without a person, and the result of the
run carries a note naming the dialog and its message. A message box with
only an OK button (DialogType 0, MB_OK) is answered OK; every other dialog
is answered Cancel, which takes nothing the script did not ask for. Outside
a script's run the dialogs are the person's and the add-in leaves them."""

# The Windows result codes OverrideResult takes: IDOK, IDCANCEL.
IDOK, IDCANCEL = 1, 2


class DialogAnswers:
    def __init__(self, uiapp):
        self.uiapp = uiapp
        self.notes = None
        uiapp.DialogBoxShowing += self._on_showing

    def begin(self):
        """Answers every dialog from now on, noting each."""
        self.notes = []

    def end(self):
        """Stops answering; answers the notes taken."""
        notes, self.notes = self.notes or [], None
        return notes

    def _on_showing(self, sender, args):
        if self.notes is None:
            return
        message = getattr(args, "Message", "") or ""
        code, answer = IDCANCEL, "Cancel"
        if getattr(args, "DialogType", None) == 0:
            code, answer = IDOK, "OK"
        args.OverrideResult(code)
        kind = "message box" if hasattr(args, "DialogType") else "task dialog" if hasattr(args, "Message") else "dialog"
        named = (" %s" % args.DialogId) if args.DialogId else ""
        self.notes.append('Revit showed a %s%s while the script ran%s; the add-in answered %s so Revit was not held '
                          'waiting for a person' % (kind, named, (': "%s"' % message) if message else "", answer))

    def detach(self):
        self.uiapp.DialogBoxShowing -= self._on_showing
