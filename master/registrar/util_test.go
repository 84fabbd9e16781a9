package registrar

import (
	"bytes"
	"context"
	"strings"
)

type bytesBuffer = bytes.Buffer

type contextContext = context.Context

func contains(s, sub string) bool { return strings.Contains(s, sub) }
