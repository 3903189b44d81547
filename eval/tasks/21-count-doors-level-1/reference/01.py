level = [o for o in doc.Objects if getattr(o, "IfcType", "") == "Building Storey" and o.Label == "Level 1"][0]
doors = [o for o in level.Group if getattr(o, "IfcType", "") == "Door"]
print("Doors on Level 1:", len(doors))
