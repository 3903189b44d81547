"""Projects of a real size for the double: generate(doc, n) adds about n
elements to the template's, in the proportions of a building model: on each
level a grid of rooms (Architecture.Room, numbered by level) enclosed by
walls, two wall segments a side, with doors and windows hosted in the walls;
floors; floor plans and 3D views; sheets (ViewSheet, each with its title
block) on which each level's plan and the 3D views are placed by viewports;
and types holding 20 to 40 type parameters each. No two walls overlap. A
workshared project (workshared=True) has four user worksets, one of them
made editable by another person (anna) and some doors borrowed by a third
(ben): what a script meets in a central model's local copy.

Elements are added as the project was opened (no transaction, no
DocumentChanged): the add-in meets them when it connects."""
from .elements import BuiltInCategory, Family, FamilySymbol, Level, WallType
from .geometry import XYZ, Line
from .rooms import Room
from .sheets import ViewSheet, Viewport
from .sketch import Floor, FloorType
from .views import View3D, ViewPlan, ViewType
from .walls import FamilyInstance, Wall

FIRST_ID = 20000
MM = 1.0 / 304.8
# A room's cell on the grid, in feet (about 6.1 x 4.9 m); each side of it is
# two wall segments, so a level holds about four walls a room.
CELL_X, CELL_Y = 20.0, 16.0
ROOM_NAMES = ("Office", "Office", "Meeting", "Corridor", "Storage", "WC", "Kitchen", "Office", "Print", "Lobby")
# Type parameters a project's families carry; the rest are numbered.
TYPE_PARAMETERS = ("Manufacturer", "Model", "Cost", "Assembly Code", "Assembly Description", "Keynote", "Type Mark",
                   "Type Comments", "URL", "Description", "Fire Rating", "OmniClass Number", "OmniClass Title",
                   "Code Name", "Function", "Material", "Finish", "Acoustic Rating", "Thermal Resistance",
                   "Warranty")
USER, OTHER, BORROWER = "you", "anna", "ben"
# (id, name, owner): worksets of a workshared project; the second is active.
WORKSETS = ((1, "Shared Levels and Grids", ""), (2, "Architecture", USER), (3, "Structure", OTHER),
            (4, "Interiors", ""))


def _params(i):
    names = list(TYPE_PARAMETERS) + ["Parameter %02d" % k for k in range(1, 21)]
    count = 20 + i % 21
    return names[:count], {("param", n): "%s %d" % (n, i) for n in names[:count]}


def _grid(walls):
    """Rows and columns of rooms a level of about this many walls holds:
    (rows + 1) * columns + rows * (columns + 1) grid edges, two walls each."""
    if walls < 8:
        return 0, 0
    columns = max(1, int((walls / 4.0) ** 0.5))
    return max(1, (walls // 2 - columns) // (2 * columns + 1)), columns


def generate(doc, n, workshared=False):
    """Adds about n elements to doc; answers how many it added."""
    s = doc._seed
    ids = iter(range(FIRST_ID, FIRST_ID + 10 * n + 1000))
    added = 0

    def add(el):
        nonlocal added
        added += 1
        return s(el, next(ids))

    levels = max(3, min(60, n // 2000))
    types = max(8, min(400, n // 250))
    views = 2 * levels + n // 1000
    views3d = views - 2 * levels
    sheets = levels + (views3d + 3) // 4
    # Each sheet with its title block, and a viewport per placed view.
    rest = max(0, n - levels - types - views - types // 4 - 2 * sheets - levels - views3d)
    openings = rest // 5
    rows, columns = _grid(rest * 2 // 5 // levels)

    level_type = next(i for i, e in doc._elements.items() if type(e).__name__ == "LevelType")
    level_ids = [add(Level(doc, {"name": "Level %02d" % (k + 3), "elevation": (k + 2) * 4000 * MM,
                                 "type": level_type}))._id for k in range(levels)]
    plan_type = next(i for i, e in doc._elements.items() if type(e).__name__ == "ViewFamilyType"
                     and e.Name == "Floor Plan")
    view3d_type = next(i for i, e in doc._elements.items() if type(e).__name__ == "ViewFamilyType"
                       and e.Name == "3D View")
    view_ids = []
    for k in range(views):
        if k < 2 * levels:
            view_ids.append(add(ViewPlan(doc, {
                "name": "%s %s" % ("Level %02d" % (k // 2 + 3), ("Plan", "Furniture")[k % 2]),
                "view_type": int(ViewType.FloorPlan), "type": plan_type, "level": level_ids[k // 2]}))._id)
        else:
            view_ids.append(add(View3D(doc, {"name": "3D %d" % k, "view_type": int(ViewType.ThreeD),
                                             "type": view3d_type}))._id)

    door_cat, window_cat = int(BuiltInCategory.OST_Doors), int(BuiltInCategory.OST_Windows)
    families = {door_cat: add(Family(doc, {"name": "Generated Door", "family_category": door_cat}))._id,
                window_cat: add(Family(doc, {"name": "Generated Window", "family_category": window_cat}))._id}
    wall_types, floor_types, symbols = [], [], {door_cat: [], window_cat: []}
    for k in range(types):
        names, values = _params(k)
        common = dict(values, param_names=names)
        kind = k % 8
        if kind < 3:
            wall_types.append(add(WallType(doc, dict(common, name="Wall %03d - %dmm" % (k, 100 + 10 * (k % 30)),
                                                     family="Basic Wall", kind=0, width=(100 + 10 * (k % 30)) * MM)))._id)
        elif kind < 4:
            floor_types.append(add(FloorType(doc, dict(common, name="Floor %03d" % k, family="Floor",
                                                       thickness=(150 + 10 * (k % 10)) * MM)))._id)
        else:
            cat = door_cat if kind < 6 else window_cat
            symbols[cat].append(add(FamilySymbol(doc, dict(
                common, name="%04d x %04dmm" % (800 + k, 2000 + k), family="Generated " + ("Door" if cat == door_cat else "Window"),
                family_id=families[cat], category=cat, width=(800 + k % 200) * MM, height=2000 * MM,
                active=True)))._id)

    wall_ids = []
    for lv, level in enumerate(level_ids):
        wall_ids += _walls(doc, add, level, lv, rows, columns, wall_types, len(wall_ids))
    room_ids = []
    for lv, level in enumerate(level_ids):
        room_ids += _rooms(doc, add, level, lv, rows, columns)
    for k in range(2 * openings if wall_ids else 0):
        cat = door_cat if k % 2 == 0 else window_cat
        host = doc._elements[wall_ids[(k // 2) % len(wall_ids)]]
        sym = symbols[cat][k % len(symbols[cat])]
        a, b = host._data["curve"].GetEndPoint(0), host._data["curve"].GetEndPoint(1)
        t = 0.25 if cat == door_cat else 0.75
        el = add(FamilyInstance(doc, {"name": doc._elements[sym].Name, "category": cat, "type": sym,
                                      "level": host._data["level"], "host": host._id,
                                      "point": XYZ(a.X + t * (b.X - a.X), a.Y + t * (b.Y - a.Y), 0.0),
                                      "sill": 2.95 if cat == window_cat else 0.0, "structural_type": 0,
                                      "comments": "", "mark": "%s%d" % ("D" if cat == door_cat else "N", k)}))
        host._data["inserts"] = host._data["inserts"] + [el._id]
    for k in range(max(0, rest - len(wall_ids) - len(room_ids) - 2 * openings)):
        x, y = (k % 50) * 12.0, (k // 50) * 30.0
        ft = floor_types[k % len(floor_types)]
        add(Floor(doc, {"name": doc._elements[ft].Name, "type": ft, "level": level_ids[k % levels],
                        "outline": [(x, y), (x + 10.0, y), (x + 10.0, y + 10.0), (x, y + 10.0)],
                        "comments": "", "mark": ""}))
    _sheets(doc, add, view_ids[:2 * levels:2], view_ids[2 * levels:])
    if workshared:
        _share_generated(doc, wall_ids, room_ids)
    # Revit opens a project with its rooms' boundaries computed; the double
    # answers them from its wall index, so it is built as the project opens
    # rather than at the first room read (an add-in's Idling slice).
    from .wallindex import WallIndex
    WallIndex.of(doc)
    return added


def _walls(doc, add, level, lv, rows, columns, wall_types, first):
    """The grid's walls on one level: each grid line of one wall type, each
    cell edge two segments that meet end to end (so none overlaps)."""
    out = []

    def wall(x0, y0, x1, y1, line):
        k = first + len(out)
        wt = wall_types[line % len(wall_types)]
        out.append(add(Wall(doc, {"name": doc._elements[wt].Name, "type": wt, "level": level,
                                  "curve": Line.CreateBound(XYZ(x0, y0, 0), XYZ(x1, y1, 0)), "height": 10.0,
                                  "offset": 0.0, "flipped": False, "structural": k % 9 == 0, "inserts": [],
                                  "comments": "", "mark": "W%d" % k}))._id)
    for i in range(rows + 1 if columns else 0):
        for j in range(columns):
            for half in (0, 1):
                x = (j + half / 2.0) * CELL_X
                wall(x, i * CELL_Y, x + CELL_X / 2.0, i * CELL_Y, lv + i)
    for j in range(columns + 1 if rows else 0):
        for i in range(rows):
            for half in (0, 1):
                y = (i + half / 2.0) * CELL_Y
                wall(j * CELL_X, y, j * CELL_X, y + CELL_Y / 2.0, lv + rows + 1 + j)
    return out


def _rooms(doc, add, level, lv, rows, columns):
    """A room in each cell of the level's grid, placed off the cell's centre
    (where two segments of a side meet), numbered by level as projects do."""
    z = doc._elements[level]._data["elevation"]
    out = []
    for i in range(rows):
        for j in range(columns):
            k = i * columns + j
            out.append(add(Room(doc, {"name": ROOM_NAMES[k % len(ROOM_NAMES)], "number": "%d%03d" % (lv + 3, k + 1),
                                      "level": level, "point": XYZ((j + 0.4) * CELL_X, (i + 0.4) * CELL_Y, z),
                                      "comments": "", "mark": ""}))._id)
    return out


def _sheets(doc, add, plans, views3d):
    """A sheet per level with its plan, and sheets of four 3D views each;
    every sheet has the template's title block (placed, so its type is
    active), and each view is on a sheet through a viewport, as
    ViewSheet.Create makes a sheet with its title block
    (https://www.revitapidocs.com/2024/bc9e8be3-f3fd-97c2-2709-1d6eea3db775.htm)
    and Viewport.Create places a view (sheets.py)."""
    tb = next(e for e in doc._elements.values() if isinstance(e, FamilySymbol)
              and e._data.get("category") == int(BuiltInCategory.OST_TitleBlocks))
    tb._data["active"] = True
    pages = [("A1%02d" % (k + 1), doc._elements[v].Name.replace(" Plan", " - Floor Plan"), [v])
             for k, v in enumerate(plans)]
    pages += [("A9%02d" % (k // 4 + 1), "3D Views %d" % (k // 4 + 1), views3d[k:k + 4])
              for k in range(0, len(views3d), 4)]
    width, height = 841 * MM, 594 * MM
    for number, name, shown in pages:
        sheet = add(ViewSheet(doc, {"name": name, "number": number, "view_type": int(ViewType.DrawingSheet),
                                    "category": int(BuiltInCategory.OST_Sheets)}))
        add(FamilyInstance(doc, {"name": tb.Name, "category": int(BuiltInCategory.OST_TitleBlocks), "type": tb._id,
                                 "view": sheet._id, "point": XYZ(0, 0, 0), "host": None, "comments": "", "mark": ""}))
        for q, v in enumerate(shown):
            centre = XYZ(width / 2.0, height / 2.0, 0) if len(shown) == 1 else \
                XYZ(width * (0.25 + 0.5 * (q % 2)), height * (0.75 - 0.5 * (q // 2)), 0)
            add(Viewport(doc, {"sheet": sheet._id, "shows": v, "center": centre, "view": sheet._id,
                               "name": doc._elements[v].Name}))


def _share_generated(doc, wall_ids, room_ids):
    from .worksharing import WorksetKind, _share
    shared = _share(doc, USER, [(wid, name, WorksetKind.UserWorkset, owner) for wid, name, owner in WORKSETS], 2)
    for i, e in doc._elements.items():
        if isinstance(e, Level):
            shared.workset_of[i] = 1
    # Every third wall is on the workset anna has made editable; the doors
    # in every fifth wall are borrowed by ben.
    for k, i in enumerate(wall_ids):
        shared.workset_of[i] = 3 if k % 3 == 0 else 2
        if k % 5 == 1:
            for door in doc._elements[i]._data["inserts"]:
                shared.borrowed[door] = BORROWER
    # Rooms are the interior designers' (the Interiors workset).
    for i in room_ids:
        shared.workset_of[i] = 4
    for i in doc._elements:
        shared.creators[i] = OTHER if shared.workset_of.get(i) == 3 else USER
