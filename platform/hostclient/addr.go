package hostclient

// DefaultAddr is where a host runtime listens on loopback unless told
// otherwise (NEXUS_HOST_ADDR): the one place the port is written for the Go
// side (the launcher's configuration tag must repeat it as a literal, and the
// host kit's Python has its own DEFAULT_ADDR).
const DefaultAddr = "127.0.0.1:7723"
