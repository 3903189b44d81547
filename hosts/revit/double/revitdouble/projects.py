"""Projects of a real size for the double: generate(doc, n) adds about n
elements to the template's, in the proportions of a building model (walls,
doors and windows hosted in them, floors, levels, floor plans and 3D views,
and types holding 20 to 40 type parameters each), laid out so no two walls
overlap. A workshared project (workshared=True) has four user worksets, one
of them made editable by another person (anna) and some doors borrowed by a
third (ben): what a script meets in a central model's local copy.

Elements are added as the project was opened (no transaction, no
DocumentChanged): the add-in meets them when it connects."""
from .elements import BuiltInCategory, Family, FamilySymbol, Level, WallType
from .geometry import XYZ, Line
from .sketch import Floor, FloorType
from .views import View3D, ViewPlan, ViewType
from .walls import FamilyInstance, Wall

FIRST_ID = 20000
MM = 1.0 / 304.8
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
    rest = max(0, n - levels - types - views - types // 4)
    walls, openings = rest // 2, rest // 5
    floors = max(0, rest - walls - 2 * openings)

    level_type = next(i for i, e in doc._elements.items() if type(e).__name__ == "LevelType")
    level_ids = [add(Level(doc, {"name": "Level %02d" % (k + 3), "elevation": (k + 2) * 4000 * MM,
                                 "type": level_type}))._id for k in range(levels)]
    plan_type = next(i for i, e in doc._elements.items() if type(e).__name__ == "ViewFamilyType"
                     and e.Name == "Floor Plan")
    view3d_type = next(i for i, e in doc._elements.items() if type(e).__name__ == "ViewFamilyType"
                       and e.Name == "3D View")
    for k in range(views):
        if k < 2 * levels:
            add(ViewPlan(doc, {"name": "%s %s" % ("Level %02d" % (k // 2 + 3), ("Plan", "Furniture")[k % 2]),
                               "view_type": int(ViewType.FloorPlan), "type": plan_type,
                               "level": level_ids[k // 2]}))
        else:
            add(View3D(doc, {"name": "3D %d" % k, "view_type": int(ViewType.ThreeD), "type": view3d_type}))

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
    for k in range(walls):
        level = level_ids[k % levels]
        row = k // levels
        x, y = (row % 50) * 12.0, (row // 50) * 3.0
        wt = wall_types[k % len(wall_types)]
        wall_ids.append(add(Wall(doc, {"name": doc._elements[wt].Name, "type": wt, "level": level,
                                       "curve": Line.CreateBound(XYZ(x, y, 0), XYZ(x + 10.0, y, 0)), "height": 10.0,
                                       "offset": 0.0, "flipped": False, "structural": k % 9 == 0, "inserts": [],
                                       "comments": "", "mark": "W%d" % k}))._id)
    for k in range(2 * openings):
        cat = door_cat if k % 2 == 0 else window_cat
        host = doc._elements[wall_ids[(k // 2) % len(wall_ids)]]
        sym = symbols[cat][k % len(symbols[cat])]
        a = host._data["curve"].GetEndPoint(0)
        el = add(FamilyInstance(doc, {"name": doc._elements[sym].Name, "category": cat, "type": sym,
                                      "level": host._data["level"], "host": host._id,
                                      "point": XYZ(a.X + (3.0 if cat == door_cat else 7.0), a.Y, 0.0),
                                      "sill": 2.95 if cat == window_cat else 0.0, "structural_type": 0,
                                      "comments": "", "mark": "%s%d" % ("D" if cat == door_cat else "N", k)}))
        host._data["inserts"] = host._data["inserts"] + [el._id]
    for k in range(floors):
        x, y = (k % 50) * 12.0, (k // 50) * 30.0
        ft = floor_types[k % len(floor_types)]
        add(Floor(doc, {"name": doc._elements[ft].Name, "type": ft, "level": level_ids[k % levels],
                        "outline": [(x, y), (x + 10.0, y), (x + 10.0, y + 10.0), (x, y + 10.0)],
                        "comments": "", "mark": ""}))
    if workshared:
        _share_generated(doc, wall_ids)
    return added


def _share_generated(doc, wall_ids):
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
    for i in doc._elements:
        shared.creators[i] = OTHER if shared.workset_of.get(i) == 3 else USER
