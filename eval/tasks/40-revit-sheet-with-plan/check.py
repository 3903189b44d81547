sheets = list(FilteredElementCollector(doc).OfClass(ViewSheet))
expect([(s.SheetNumber, s.Name) for s in sheets] == [("A101", "Ground Floor")],
       "sheets (number, name): %s" % [(s.SheetNumber, s.Name) for s in sheets])
sheet = sheets[0]
placed = [doc.GetElement(i) for i in sheet.GetAllViewports()]
expect(len(placed) == 1, "want one viewport on the sheet, found %d" % len(placed))
vp = placed[0]
view = doc.GetElement(vp.ViewId)
expect(isinstance(view, ViewPlan) and view.GenLevel is not None and view.GenLevel.Name == "Level 1",
       "the sheet shows %s %r, not the Level 1 floor plan" % (type(view).__name__, view.Name))
c = vp.GetBoxCenter()
expect(abs(mm(c.X) - 420) < 1 and abs(mm(c.Y) - 297) < 1, "the viewport is centred at %.0f, %.0f mm" % (mm(c.X), mm(c.Y)))
blocks = [e.Name for e in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_TitleBlocks).WhereElementIsNotElementType()
          if e.OwnerViewId == sheet.Id]
expect(blocks == ["A1"], "the sheet's title blocks: %s" % blocks)
