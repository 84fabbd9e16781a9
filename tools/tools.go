//go:build tools

// Package tools pins the code generators that `make generate` runs.
package tools

import _ "google.golang.org/protobuf/cmd/protoc-gen-go"
