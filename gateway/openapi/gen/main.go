// Command gen writes the gateway's OpenAPI 3 document from the Swagger 2
// document the protos generate (go generate in gateway/openapi).
package main

import (
	"fmt"
	"os"

	"nexus.local/gateway/openapi/builder"
	swagger "nexus.local/gen/openapi"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen OUTPUT.json")
		os.Exit(2)
	}
	doc, err := builder.Build(swagger.Spec, builder.DevVersion)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build the openapi document:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "write the openapi document:", err)
		os.Exit(1)
	}
}
