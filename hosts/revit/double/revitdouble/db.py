"""Everything Autodesk.Revit.DB holds in the double."""
from .collector import FilteredElementCollector
from .filters import (ElementCategoryFilter, ElementClassFilter, ElementFilter, ElementIsElementTypeFilter,
                      ElementLevelFilter, ElementLogicalFilter, ElementMulticategoryFilter, ElementQuickFilter,
                      ElementSlowFilter, ExclusionFilter, FamilyInstanceFilter, LogicalAndFilter, LogicalOrFilter)
from .customexport import (CustomExporter, FaceNode, IExportContext, IModelExportContext, InstanceNode, PolymeshFacet,
                           PolymeshTopology, RenderNode, RenderNodeAction, ViewNode)
from .document import Document
from .elements import (BuiltInCategory, Category, Element, ElementType, Family, FamilySymbol, Level, LevelType,
                       LocationCurve, LocationPoint, WallKind, WallType)
from .export import (ExportRange, FitDirectionType, ImageExportOptions, ImageFileType, ImageResolution, ZoomFitType)
from .geometry import BoundingBoxXYZ, Curve, Line, Transform, XYZ
from .ids import ElementId
from .parameters import BuiltInParameter, Parameter, StorageType
from .transactions import (FailureHandlingOptions, FailureMessageAccessor, FailureProcessingResult, FailureSeverity,
                           FailuresAccessor, IFailuresPreprocessor, SubTransaction, Transaction, TransactionGroup,
                           TransactionStatus)
from .units import ForgeTypeId, UnitTypeId, UnitUtils
from .views import View, View3D, ViewFamily, ViewFamilyType, ViewPlan, ViewType
from .walls import FamilyInstance, Wall
from .sketch import CurveElement, CurveLoop, Floor, FloorType, ModelLine, Plane, ReferencePlane, SketchPlane
from .worksharing import (CheckoutStatus, FilteredWorksetCollector, Workset, WorksetId, WorksetKind, WorksetTable,
                          WorksharingTooltipInfo, WorksharingUtils)
from .curtain import CurtainGrid, CurtainGridLine, Mullion, MullionType, Panel, PanelType
from .hosting import FamilyPlacementType, HostObjectUtils, Reference, ShellLayerType
from .phases import Phase, PhaseArray
from .rooms import (BoundarySegment, SpatialElement, SpatialElementBoundaryLocation, SpatialElementBoundaryOptions,
                    UV)
from .sheets import (SchedulableField, ScheduleDefinition, ScheduleField, ScheduleFieldType, ViewSchedule, ViewSheet,
                     Viewport)
from .annotation import IndependentTag, TagMode, TagOrientation
from . import structure as Structure

__all__ = [n for n in dir() if not n.startswith("_")]
