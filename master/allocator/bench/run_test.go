package bench

import "testing"

func TestRunSmall(t *testing.T) {
	for _, cfg := range []Config{
		{Agents: 50, Frameworks: 5, Cycles: 3},
		{Agents: 30, Frameworks: 6, Roles: 3, Quota: true, Cycles: 3},
	} {
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Offers == 0 || r.CycleMS <= 0 || r.Machine.NumCPU == 0 {
			t.Errorf("Run(%+v) = %+v", cfg, r)
		}
	}
	if _, err := Run(Config{Agents: 0, Frameworks: 1}); err == nil {
		t.Error("zero agents accepted")
	}
	if _, err := Run(Config{Agents: 1, Frameworks: 1, Roles: 2}); err == nil {
		t.Error("more roles than frameworks accepted")
	}
}
