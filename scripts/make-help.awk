# Lists the Makefile's documented targets (a "## " comment after the target):
# the two a newcomer needs, run and test, first, then the rest in file order.
# Colour only when tty is set, so piped or redirected help stays plain text.
BEGIN { FS = ":.*## " }
/^[a-zA-Z_-]+:.*## / { about[$1] = $2; order[n++] = $1 }
function show(t) {
  if (tty) printf "  \033[36m%-10s\033[0m %s\n", t, about[t]
  else printf "  %-10s %s\n", t, about[t]
}
END {
  for (i = 0; i < n; i++) if (order[i] == "run" || order[i] == "test") show(order[i])
  for (i = 0; i < n; i++) if (order[i] != "run" && order[i] != "test") show(order[i])
}
