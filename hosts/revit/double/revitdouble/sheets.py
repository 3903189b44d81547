"""Schedules, sheets and viewports.

ViewSchedule.CreateSchedule(document, categoryId) makes a schedule of a
category's elements, with no fields yet; a category the double does not
schedule throws ArgumentException, and outside a transaction
ModificationOutsideTransactionException
(https://www.revitapidocs.com/2024/1ecd67b8-3b02-df2e-9b85-f8254aebf570.htm).
Its Definition offers the category's parameters as SchedulableFields and
AddField appends one as a column.

ViewSheet.Create(document, titleBlockTypeId) makes a sheet with that title
block (InvalidElementId for none), a family instance the sheet owns
(Element.OwnerViewId). Viewport.Create(document, sheetId,
viewId, point) places a view on a sheet, centred on the point; a view
already on a sheet, a sheet or a schedule cannot be placed
(Viewport.CanAddViewToSheet) and throws ArgumentException
(https://www.revitapidocs.com/2024/0f951f28-eb6b-2a37-668a-b248bfb7de97.htm)."""

from . import errors
from .elements import BuiltInCategory, CATEGORY_NAMES, Element, FamilySymbol
from .errors import ArgumentException
from .geometry import XYZ
from .ids import ElementId, NetList
from .parameters import BuiltInParameter, Spec, StorageType, common_specs
from .views import View, ViewType
from .netenum import NetEnum


class ScheduleFieldType(NetEnum):
    Instance = 0
    ElementType = 1
    Count = 2
    ViewBased = 3
    Formula = 4
    Percentage = 5


# The fields each schedulable category offers: (BuiltInParameter, name, of the type?).
_FIELDS = {
    BuiltInCategory.OST_Doors: [(BuiltInParameter.ALL_MODEL_MARK, "Mark", False),
                                (BuiltInParameter.FAMILY_LEVEL_PARAM, "Level", False),
                                (BuiltInParameter.ELEM_TYPE_PARAM, "Type", False),
                                (BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS, "Comments", False),
                                (BuiltInParameter.FAMILY_WIDTH_PARAM, "Width", True),
                                (BuiltInParameter.FAMILY_HEIGHT_PARAM, "Height", True)],
    BuiltInCategory.OST_Rooms: [(BuiltInParameter.ROOM_NUMBER, "Number", False),
                                (BuiltInParameter.ROOM_NAME, "Name", False),
                                (BuiltInParameter.ROOM_AREA, "Area", False),
                                (BuiltInParameter.ROOM_LEVEL_ID, "Level", False)],
    BuiltInCategory.OST_Walls: [(BuiltInParameter.ALL_MODEL_MARK, "Mark", False),
                                (BuiltInParameter.ELEM_TYPE_PARAM, "Type", False),
                                (BuiltInParameter.CURVE_ELEM_LENGTH, "Length", False),
                                (BuiltInParameter.WALL_USER_HEIGHT_PARAM, "Unconnected Height", False)],
}
_FIELDS[BuiltInCategory.OST_Windows] = list(_FIELDS[BuiltInCategory.OST_Doors])
_SINGULAR = {BuiltInCategory.OST_Doors: "Door", BuiltInCategory.OST_Windows: "Window",
             BuiltInCategory.OST_Rooms: "Room", BuiltInCategory.OST_Walls: "Wall"}


def _int(element_id):
    return element_id.Value if ElementId._version >= 2024 else element_id.IntegerValue


class SchedulableField:
    def __init__(self, field_type=ScheduleFieldType.Instance, parameter_id=None):
        self._type = ScheduleFieldType(field_type)
        self._param = parameter_id if parameter_id is not None else ElementId.InvalidElementId

    FieldType = property(lambda self: self._type)
    ParameterId = property(lambda self: self._param)

    def GetName(self, document):
        for fields in _FIELDS.values():
            for bip, name, _ in fields:
                if int(bip) == _int(self._param):
                    return name
        return ""

    def __eq__(self, other):
        return isinstance(other, SchedulableField) and (other._type, _int(other._param)) == (self._type, _int(self._param))

    def __hash__(self):
        return hash((self._type, _int(self._param)))


class ScheduleField:
    def __init__(self, schedule, index):
        self._schedule, self._index = schedule, index

    def _row(self):
        return self._schedule._live()._data["fields"][self._index]

    FieldIndex = property(lambda self: self._index)
    ParameterId = property(lambda self: ElementId(self._row()["param"]))
    FieldType = property(lambda self: ScheduleFieldType(self._row()["type"]))

    def GetName(self):
        return self._row()["name"]

    @property
    def ColumnHeading(self):
        return self._row()["heading"]

    @ColumnHeading.setter
    def ColumnHeading(self, value):
        errors.require(value, "ColumnHeading")
        rows = [dict(r) for r in self._schedule._data["fields"]]
        rows[self._index]["heading"] = str(value)
        self._schedule._set("fields", rows)


class ScheduleDefinition:
    def __init__(self, schedule):
        self._schedule = schedule

    CategoryId = property(lambda self: ElementId(self._schedule._live()._data["schedule_category"]))

    def GetSchedulableFields(self):
        cat = BuiltInCategory(self._schedule._live()._data["schedule_category"])
        return NetList(SchedulableField(ScheduleFieldType.ElementType if of_type else ScheduleFieldType.Instance,
                                        ElementId(int(bip)))
                       for bip, _, of_type in _FIELDS[cat])

    def IsSchedulableField(self, field):
        return field in self.GetSchedulableFields()

    def AddField(self, *args):
        """AddField(SchedulableField) or AddField(ScheduleFieldType, parameterId)."""
        field = args[0] if len(args) == 1 else SchedulableField(args[0], args[1])
        errors.require(field, "schedulableField")
        if not self.IsSchedulableField(field):
            raise ArgumentException("schedulableField is not one of the fields this schedule can hold "
                                    "(ScheduleDefinition.GetSchedulableFields).")
        name = field.GetName(self._schedule._doc)
        rows = list(self._schedule._live()._data["fields"]) + [
            {"param": _int(field.ParameterId), "type": int(field.FieldType), "name": name, "heading": name}]
        self._schedule._set("fields", rows)
        return ScheduleField(self._schedule, len(rows) - 1)

    def GetFieldCount(self):
        return len(self._schedule._live()._data["fields"])

    def GetField(self, index):
        if not 0 <= index < self.GetFieldCount():
            raise errors.ArgumentOutOfRangeException("index %d is not a field index: the schedule has %d fields"
                                                     % (index, self.GetFieldCount()))
        return ScheduleField(self._schedule, index)

    def GetFieldOrder(self):
        return NetList(ElementId(i) for i in range(self.GetFieldCount()))


class ViewSchedule(View):
    @staticmethod
    def CreateSchedule(document, category_id):
        errors.require(document, "document")
        errors.require(category_id, "categoryId")
        try:
            cat = BuiltInCategory(_int(category_id))
        except ValueError:
            cat = None
        if cat not in _FIELDS:
            raise ArgumentException("categoryId is not a valid category for a regular schedule.")
        document._guard()
        return document._add(ViewSchedule(document, {
            "name": "%s Schedule" % _SINGULAR.get(cat, CATEGORY_NAMES[cat]), "view_type": int(ViewType.Schedule),
            "schedule_category": int(cat), "fields": []}))

    Definition = property(lambda self: ScheduleDefinition(self._live()))


class ViewSheet(View):
    @staticmethod
    def Create(document, title_block_type_id):
        errors.require(document, "document")
        errors.require(title_block_type_id, "titleBlockTypeId")
        tb = None
        if _int(title_block_type_id) != -1:
            tb = document.GetElement(title_block_type_id)
            if not isinstance(tb, FamilySymbol) or tb._data.get("category") != int(BuiltInCategory.OST_TitleBlocks):
                raise ArgumentException("titleBlockTypeId is not a title block type.")
        document._guard()
        numbers = [int(e._data["number"][1:]) for e in document._elements.values()
                   if isinstance(e, ViewSheet) and e._data["number"][1:].isdigit()]
        sheet = document._add(ViewSheet(document, {
            "name": "Unnamed", "number": "A%d" % (max(numbers, default=100) + 1), "view_type": int(ViewType.DrawingSheet),
            "category": int(BuiltInCategory.OST_Sheets)}))
        if tb is not None:
            # The title block is a family instance the sheet owns (its OwnerViewId).
            from .walls import FamilyInstance
            document._add(FamilyInstance(document, {
                "name": tb.Name, "category": int(BuiltInCategory.OST_TitleBlocks), "type": tb._id, "view": sheet._id,
                "point": XYZ(0, 0, 0), "host": None, "comments": "", "mark": ""}))
        return sheet

    @property
    def SheetNumber(self):
        return self._live()._data["number"]

    @SheetNumber.setter
    def SheetNumber(self, value):
        errors.require(value, "SheetNumber")
        if any(isinstance(e, ViewSheet) and e is not self and e._data["number"] == value
               for e in self._doc._elements.values()):
            raise ArgumentException("Sheet number %r is already in use." % value)
        self._set("number", str(value))

    def GetAllViewports(self):
        return NetList(ElementId(i) for i, e in sorted(self._doc._elements.items())
                       if isinstance(e, Viewport) and e._data["sheet"] == self._id)

    def GetAllPlacedViews(self):
        return NetList(ElementId(e._data["shows"]) for _, e in sorted(self._doc._elements.items())
                       if isinstance(e, Viewport) and e._data["sheet"] == self._id)

    def _dependents(self):
        # Its viewports and title block.
        return [i for i, e in self._doc._elements.items() if e._data.get("view") == self._id]

    def _deletable(self):
        return True

    def _specs(self):
        return common_specs() + [
            Spec(BuiltInParameter.SHEET_NUMBER, "Sheet Number", StorageType.String, "number"),
            Spec(BuiltInParameter.SHEET_NAME, "Sheet Name", StorageType.String, "name"),
        ]


class Viewport(Element):
    _CATEGORY = BuiltInCategory.OST_Viewports

    @staticmethod
    def CanAddViewToSheet(document, sheet_id, view_id):
        errors.require(document, "document")
        sheet, view = document.GetElement(sheet_id), document.GetElement(view_id)
        if not isinstance(sheet, ViewSheet) or not isinstance(view, View):
            return False
        if isinstance(view, (ViewSheet, ViewSchedule)):
            return False
        return not any(isinstance(e, Viewport) and e._data["shows"] == view._id for e in document._elements.values())

    @staticmethod
    def Create(document, sheet_id, view_id, point):
        errors.require(document, "document")
        errors.require(sheet_id, "viewSheetId")
        errors.require(view_id, "viewId")
        errors.require(point, "point")
        if not isinstance(document.GetElement(sheet_id), ViewSheet):
            raise ArgumentException("viewSheetId is not a ViewSheet.")
        if not Viewport.CanAddViewToSheet(document, sheet_id, view_id):
            raise ArgumentException("viewId cannot be added to the ViewSheet.")
        document._guard()
        return document._add(Viewport(document, {"sheet": _int(sheet_id), "shows": _int(view_id), "center": point,
                                                 "view": _int(sheet_id),
                                                 "name": document.GetElement(view_id).Name}))

    SheetId = property(lambda self: ElementId(self._live()._data["sheet"]))
    ViewId = property(lambda self: ElementId(self._live()._data["shows"]))

    def GetBoxCenter(self):
        return self._live()._data["center"]

    def SetBoxCenter(self, point):
        errors.require(point, "newCenterPoint")
        self._set("center", point)
