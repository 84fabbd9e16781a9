package paper

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// getJSON GETs url into v.
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
