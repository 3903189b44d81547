#!/usr/bin/env bash
# Makes sure a Redis server answers on 127.0.0.1:6379 for the tests, starting
# one (without persistence) when none runs.
set -euo pipefail
if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  exit 0
fi
echo "ensure-redis: starting redis-server on 127.0.0.1:6379"
mkdir -p /tmp/nexus-redis
redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
  --dir /tmp/nexus-redis --logfile /tmp/nexus-redis/redis.log
for _ in $(seq 50); do
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && exit 0
  sleep 0.1
done
echo "ensure-redis: redis-server did not answer on 127.0.0.1:6379; see /tmp/nexus-redis/redis.log" >&2
exit 1
