//go:build tools

package tools

import (
	_ "github.com/containerd/cgroups/v3"
	_ "github.com/containerd/cgroups/v3/cgroup1"
	_ "github.com/containerd/cgroups/v3/cgroup2"
	_ "github.com/google/uuid"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "pgregory.net/rapid"
)
