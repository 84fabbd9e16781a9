//go:build tools

package tools
import (_ "pgregory.net/rapid"; _ "github.com/google/uuid")
