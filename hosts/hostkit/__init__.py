"""The Nexus host kit: what every host runtime (desktop add-in) shares.

A host runtime serves three generic primitives (GET /v1/info, POST
/v1/execute, POST /v1/export-view; the wire format is the protojson form of
proto/nexus/host/v1/host.proto) and knows nothing about models, tools or
verification. The kit holds everything of that which is not one application's:

  server      the loopback HTTP server; work goes to the main thread's queue
  auth        the loopback address, the pairing token and the allowed origin
  limits      request limits: body size, header and body deadlines
  executor    running a script: stdout capture, the script's threads, its errors
  deadline    a script's timeout (tracer, alarm, watchdog), taken down whole
  runner      the three modes (read-only, transaction, preview) on an adapter
  ledger      the call-id ledger: each tool call id runs once
  fileledger  the ledger kept with the person's file, tied to its saves
  checkpoints the document saved as generations, for restarts and reloads
  wire        the JSON wire format: request fields, results, change reports
  imagefit    the image sizing rule shared with the model router
  png         a PNG encoder for hosts that rasterise themselves
  process     the runtime as a process: launcher status pipe, children, parent
  adapter     the interface a host application implements

A host is an adapter on the kit (hosts/freecad/nexus_freecad is FreeCAD's).
"""
