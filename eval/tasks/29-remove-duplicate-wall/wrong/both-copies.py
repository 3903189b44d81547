for label in ("East wall", "East wall copy"):
    doc.removeObject(doc.getObjectsByLabel(label)[0].Name)
