// Package replicatest runs Nexus the way a deployment does, with every
// service in its own process and several orchestrator replicas and gateways
// sharing one Redis, and checks what only such a mesh can show: any replica
// accepts any request, results reach the replica that holds the run exactly
// once, and runs survive a Redis restart and fail cleanly when their replica
// dies.
package replicatest
