//go:build tools

package tools

import (
	_ "github.com/google/uuid"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "pgregory.net/rapid"
)
