package paper

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"mezzo/sim/internal/mastertest"
)

var (
	mezzoBin string
	buildErr error
)

func TestMain(m *testing.M) {
	root, err := filepath.Abs("../..")
	if err == nil {
		mezzoBin, buildErr = mastertest.Build(root)
	} else {
		buildErr = err
	}
	os.Exit(m.Run())
}

// testEnv starts real `mezzo master` processes (in-memory registry, an
// allocation interval of 100 ms unless flags say otherwise: later flags
// win), each stopped at the end of the test at the latest.
func testEnv(t *testing.T) Env {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return Env{
		Master: func(_ context.Context, flags ...string) (string, func(), error) {
			m := mastertest.Start(t, mezzoBin, mastertest.FreePort(t), "", flags...)
			return m.Addr, m.Kill, nil
		},
		Logf: t.Logf,
	}
}
