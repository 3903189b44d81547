#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 for the tests
# (user postgres, trust authentication), starting a throwaway one in
# /tmp/nexus-postgres when none runs. Tests create and drop databases of their
# own on it; NEXUS_TEST_POSTGRES_URL points them at another server.
set -euo pipefail
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ready; then
  exit 0
fi
bin=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  [ -x "$d/initdb" ] && bin="$d" && break
done
if [ -z "$bin" ]; then
  bin="$(dirname "$(command -v initdb)")" || { echo "ensure-postgres: no initdb; run make deps" >&2; exit 1; }
fi
dir=/tmp/nexus-postgres
run=()
if [ "$(id -u)" = 0 ]; then
  # PostgreSQL refuses to run as root.
  run=(runuser -u postgres --)
fi
echo "ensure-postgres: starting PostgreSQL on 127.0.0.1:5432 in $dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
  mkdir -p "$dir"
  [ ${#run[@]} -gt 0 ] && chown postgres: "$dir"
  "${run[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync >/dev/null
fi
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p 5432 -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
ready || { echo "ensure-postgres: PostgreSQL did not answer on 127.0.0.1:5432; see $dir/server.log" >&2; exit 1; }
