package registrar

import (
	"context"
	"strings"
)

type contextContext = context.Context

func contains(s, sub string) bool { return strings.Contains(s, sub) }
