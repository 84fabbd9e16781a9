package sysmetrics

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadFrom(t *testing.T) {
	tests := []struct {
		name     string
		loadavg  string
		meminfo  string
		want     map[string]float64
		wantKeys int
	}{
		{"full", "0.52 1.25 2.00 1/234 5678\n", "MemTotal:       16384 kB\nMemFree:         2048 kB\nMemAvailable:    8192 kB\n",
			map[string]float64{"system/cpus_total": 4, "system/load_1min": 0.52, "system/load_5min": 1.25, "system/load_15min": 2,
				"system/mem_total_bytes": 16384 * 1024, "system/mem_free_bytes": 2048 * 1024}, 6},
		{"no meminfo", "1 2 3 1/1 1\n", "", map[string]float64{"system/cpus_total": 4, "system/load_15min": 3}, 4},
		{"garbled loadavg", "x y\n", "MemTotal: 1 kB\nMemFree: 1 kB\n", map[string]float64{"system/mem_free_bytes": 1024}, 3},
		{"MemFree missing", "1 1 1\n", "MemTotal: 1 kB\n", map[string]float64{"system/load_1min": 1}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "loadavg"), []byte(tt.loadavg), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.meminfo != "" {
				if err := os.WriteFile(filepath.Join(dir, "meminfo"), []byte(tt.meminfo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := ReadFrom(dir, 4)
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if len(got) != tt.wantKeys {
				t.Errorf("got %d keys %v, want %d", len(got), got, tt.wantKeys)
			}
		})
	}
}

// On the test machine itself every key is present and plausible.
func TestReadHost(t *testing.T) {
	m := Read()
	if m["system/cpus_total"] < 1 || m["system/mem_total_bytes"] <= 0 || m["system/mem_free_bytes"] > m["system/mem_total_bytes"] {
		t.Errorf("implausible host metrics %v", m)
	}
	if _, ok := m["system/load_1min"]; !ok {
		t.Errorf("no load average: %v", m)
	}
}
