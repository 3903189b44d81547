w3 = doc.getObjectsByLabel("W3")[0]
w3.Hosts = [doc.getObjectsByLabel("Wall A")[0]]
