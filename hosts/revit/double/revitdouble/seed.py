"""A new project as Revit's metric architectural template opens it, cut down
to what the double models: two levels, basic wall types and a curtain wall
type, door, window, light, desk, title block and tag families with their
types, the two phases, the default 3D view and a plan per level."""
from .elements import Family, FamilySymbol, Level, LevelType, WallType, BuiltInCategory
from .sketch import FloorType
from .views import ViewFamily, ViewFamilyType, ViewPlan, View3D, ViewType

MM = 1.0 / 304.8


def seed_project(doc):
    s = doc._seed
    s(LevelType(doc, {"name": "8mm Head", "family": "Level"}), 101)
    s(Level(doc, {"name": "Level 1", "elevation": 0.0, "type": 101}), 311)
    s(Level(doc, {"name": "Level 2", "elevation": 4000 * MM, "type": 101}), 9946)
    for eid, name, width in ((400, "Generic - 200mm", 200), (401, "Generic - 300mm", 300),
                             (402, "Exterior - Brick on CMU", 340)):
        s(WallType(doc, {"name": name, "family": "Basic Wall", "kind": 0, "width": width * MM}), eid)
    doc._default_wall = 400
    s(FloorType(doc, {"name": "Generic 150mm", "family": "Floor", "thickness": 150 * MM}), 450)
    door, window = int(BuiltInCategory.OST_Doors), int(BuiltInCategory.OST_Windows)
    s(Family(doc, {"name": "Single-Flush", "family_category": door}), 500)
    s(Family(doc, {"name": "Fixed", "family_category": window}), 510)
    # Loaded but unused symbols are inactive, so a script must Activate one
    # before placing it, as in Revit.
    for eid, fam, name, cat, w, h in ((501, 500, "0915 x 2134mm", door, 915, 2134),
                                      (502, 500, "0864 x 2032mm", door, 864, 2032),
                                      (511, 510, "0915 x 1220mm", window, 915, 1220)):
        family = doc._elements[fam].Name
        s(FamilySymbol(doc, {"name": name, "family": family, "family_id": fam, "category": cat,
                             "width": w * MM, "height": h * MM, "active": False}), eid)
    s(ViewFamilyType(doc, {"name": "3D View", "family": "3D View", "view_family": int(ViewFamily.ThreeDimensional)}), 600)
    s(ViewFamilyType(doc, {"name": "Floor Plan", "family": "Floor Plan", "view_family": int(ViewFamily.FloorPlan)}), 601)
    s(View3D(doc, {"name": "{3D}", "view_type": int(ViewType.ThreeD), "type": 600, "seed": True}), 700)
    s(ViewPlan(doc, {"name": "Level 1", "view_type": int(ViewType.FloorPlan), "type": 601, "level": 311,
                     "seed": True}), 701)
    s(ViewPlan(doc, {"name": "Level 2", "view_type": int(ViewType.FloorPlan), "type": 601, "level": 9946,
                     "seed": True}), 702)
    _seed_more(doc, s)
    return doc


def _seed_more(doc, s):
    """Phases, a curtain wall type with its mullion and panel types, a
    title block, door and window tags, a face-based wall light and a desk."""
    from .curtain import MullionType, PanelType
    from .hosting import FamilyPlacementType
    from .phases import Phase
    s(Phase(doc, {"name": "Existing"}), 80)
    s(Phase(doc, {"name": "New Construction"}), 81)
    s(WallType(doc, {"name": "Curtain Wall 1", "family": "Curtain Wall", "kind": 1, "width": 0.0}), 403)
    s(MullionType(doc, {"name": "50 x 150mm", "family": "Rectangular Mullion", "width": 50 * MM, "height": 150 * MM}), 420)
    s(PanelType(doc, {"name": "Glazed", "family": "System Panel", "width": 0.0, "height": 0.0}), 421)
    placement = {int(BuiltInCategory.OST_Doors): FamilyPlacementType.OneLevelBasedHosted,
                 int(BuiltInCategory.OST_Windows): FamilyPlacementType.OneLevelBasedHosted}
    for e in list(doc._elements.values()):
        if isinstance(e, Family):
            e._data["placement"] = int(placement[e._data["family_category"]])
    for fam_id, sym_id, cat, family, name, place, w, h in (
            (520, 521, BuiltInCategory.OST_TitleBlocks, "A1 metric", "A1", FamilyPlacementType.ViewBased, 841, 594),
            (522, 523, BuiltInCategory.OST_DoorTags, "Door Tag", "Door Tag", FamilyPlacementType.ViewBased, 0, 0),
            (524, 525, BuiltInCategory.OST_WindowTags, "Window Tag", "Window Tag", FamilyPlacementType.ViewBased, 0, 0),
            (526, 527, BuiltInCategory.OST_LightingFixtures, "Wall Light - Face Based", "60W",
             FamilyPlacementType.WorkPlaneBased, 200, 200),
            (528, 529, BuiltInCategory.OST_Furniture, "Desk", "1525 x 762mm", FamilyPlacementType.OneLevelBased,
             1525, 762)):
        s(Family(doc, {"name": family, "family_category": int(cat), "placement": int(place)}), fam_id)
        s(FamilySymbol(doc, {"name": name, "family": family, "family_id": fam_id, "category": int(cat),
                             "width": w * MM, "height": h * MM, "active": False}), sym_id)
