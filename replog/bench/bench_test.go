package bench

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

func TestRunSmall(t *testing.T) {
	res, err := Run(Config{Agents: 3000, Dir: t.TempDir(), Concurrency: 128})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.AdmitPerS <= 0 || res.RecoverMS <= 0 || res.Bytes <= 0 || res.Writes == 0 {
		t.Fatalf("incomplete result %+v", res)
	}
}

// TestRunFromEnv runs a full measurement when MEZZO_BENCH_AGENTS is set
// (until `mezzo bench registrar` is wired): MEZZO_BENCH_AGENTS=50000
// [MEZZO_BENCH_CONCURRENCY=512] go test -run TestRunFromEnv -v ./replog/bench
func TestRunFromEnv(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MEZZO_BENCH_AGENTS"))
	if n == 0 {
		t.Skip("MEZZO_BENCH_AGENTS not set")
	}
	c, _ := strconv.Atoi(os.Getenv("MEZZO_BENCH_CONCURRENCY"))
	res, err := Run(Config{Agents: n, Concurrency: c, Dir: os.Getenv("MEZZO_BENCH_DIR")})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	t.Logf("%s", out)
}
