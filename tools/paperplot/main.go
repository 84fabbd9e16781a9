// Command paperplot draws the figures of docs/paper.md from the results
// `mezzo bench paper <experiment> --json` wrote (locality.json,
// sharing.json, overhead.json, failover.json in -dir), with gonum/plot,
// as SVG beside them. `make paper` runs the experiments and then this;
// `make paper-plots` redraws from the committed results alone.
//
// Each figure shows ours next to the paper's numbers where the paper
// states them (its text and tables; values it only drew are not guessed).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", "docs/paper", "directory of the results, where the figures go")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "paperplot:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	drawn := 0
	steps := []struct {
		file string
		draw func(dir, file string) error
	}{
		{"locality.json", drawLocality},
		{"sharing.json", drawSharing},
		{"overhead.json", drawOverhead},
		{"failover.json", drawFailover},
	}
	for _, s := range steps {
		path := filepath.Join(dir, s.file)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "paperplot: no %s; skipping its figures\n", path)
			continue
		}
		if err := s.draw(dir, path); err != nil {
			return fmt.Errorf("%s: %w", s.file, err)
		}
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("no results in %s", dir)
	}
	return nil
}

// load decodes a result file.
func load[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return v, nil
}
