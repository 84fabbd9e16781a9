// Command ovsplot draws docs/images/oversubscription.svg from the result
// `mezzo bench oversubscription --json` wrote: the CPU the service's and
// the tenant's containers used over time, without oversubscription (top)
// and with it (bottom), with the service's load rise marked. `make
// oversubscription` runs the benchmark and then this; `make
// oversubscription-plot` redraws from the committed result.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// result is the part of the benchmark's JSON drawn here.
type result struct {
	UtilizationGain    float64 `json:"utilization_gain"`
	ServiceSlowdownPct float64 `json:"service_slowdown_pct"`
	EvictionMs         float64 `json:"eviction_ms"`
	Config             struct {
		DurationS float64 `json:"duration_s"`
		RiseAtS   float64 `json:"rise_at_s"`
	} `json:"config"`
	Nproc int             `json:"nproc"`
	Runs  map[string]*run `json:"runs"`
	// Rounds, when the benchmark made several: the runs drawn are the
	// last round's, so the title gives that round's figures.
	Rounds []struct {
		UtilizationGain    float64 `json:"utilization_gain"`
		ServiceSlowdownPct float64 `json:"service_slowdown_pct"`
		EvictionMs         float64 `json:"eviction_ms"`
	} `json:"rounds"`
}

type run struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	Timeline   []struct {
		T       float64 `json:"t"`
		Service float64 `json:"service_cpus"`
		Tenant  float64 `json:"tenant_cpus"`
	} `json:"timeline"`
}

func main() {
	in := flag.String("in", "docs/oversubscription/bench.json", "the benchmark's JSON result")
	out := flag.String("out", "docs/images/oversubscription.svg", "the SVG (or .png) to write")
	flag.Parse()
	if err := draw1(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ovsplot:", err)
		os.Exit(1)
	}
}

func draw1(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if n := len(r.Rounds); n > 0 {
		last := r.Rounds[n-1]
		r.UtilizationGain, r.ServiceSlowdownPct, r.EvictionMs = last.UtilizationGain, last.ServiceSlowdownPct, last.EvictionMs
	}
	var plots [][]*plot.Plot
	for _, mode := range []string{"without", "with"} {
		ru := r.Runs[mode]
		if ru == nil {
			continue
		}
		p, err := cpuPlot(mode, ru, r)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{p})
	}
	if len(plots) == 0 {
		return fmt.Errorf("%s: no runs", in)
	}
	return save(out, 18*vg.Centimeter, vg.Length(len(plots))*7*vg.Centimeter, plots)
}

// cpuPlot stacks the tenant's CPU on the service's over one run.
func cpuPlot(mode string, ru *run, r result) (*plot.Plot, error) {
	p := plot.New()
	title := fmt.Sprintf("without oversubscription: tasks used %.1f cpu·s", ru.CPUSeconds)
	if mode == "with" {
		title = fmt.Sprintf("with oversubscription: %.1f cpu·s (gain %.2f×), service slowdown %.1f%%, eviction %.0f ms",
			ru.CPUSeconds, r.UtilizationGain, r.ServiceSlowdownPct, r.EvictionMs)
	}
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "cpus used"
	service, total := make(plotter.XYs, len(ru.Timeline)), make(plotter.XYs, len(ru.Timeline))
	for i, s := range ru.Timeline {
		service[i] = plotter.XY{X: s.T, Y: s.Service}
		total[i] = plotter.XY{X: s.T, Y: s.Service + s.Tenant}
	}
	// The tenant's area is drawn first (service + tenant), the service's
	// over it, so the tenant shows as the band on top.
	tenantArea, err := plotter.NewLine(total)
	if err != nil {
		return nil, err
	}
	tenantArea.FillColor = color.RGBA{R: 0xf0, G: 0xa0, B: 0x40, A: 0xff}
	tenantArea.Color = tenantArea.FillColor
	serviceArea, err := plotter.NewLine(service)
	if err != nil {
		return nil, err
	}
	serviceArea.FillColor = plotutil.Color(0)
	serviceArea.Color = plotutil.Color(0)
	top := float64(max(r.Nproc, 2)) + 0.9
	rise, err := plotter.NewLine(plotter.XYs{{X: r.Config.RiseAtS, Y: 0}, {X: r.Config.RiseAtS, Y: top}})
	if err != nil {
		return nil, err
	}
	rise.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	rise.Color = color.Black
	p.Add(tenantArea, serviceArea, rise, plotter.NewGrid())
	// After Add, which widens the axes to the data.
	p.Y.Min, p.X.Min, p.X.Max = 0, 0, r.Config.DurationS
	p.Y.Max = float64(max(r.Nproc, 2)) + 0.9 // room for the legend above the cpus
	p.Legend.Add("tenant (revocable)", tenantArea)
	p.Legend.Add("service (reserved)", serviceArea)
	p.Legend.Add("service load rises", rise)
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

// save writes the plots, one per row, as one SVG (or PNG, by the name).
func save(path string, w, h vg.Length, rows [][]*plot.Plot) error {
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(path, ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	} else {
		img = vgsvg.New(w, h)
	}
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(rows), Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for _, row := range rows {
		for _, p := range row {
			p.Legend.TextStyle.Font.Size = vg.Points(9)
			p.Title.TextStyle.Font.Size = vg.Points(10)
		}
	}
	cs := plot.Align(rows, t, dc)
	for i, row := range rows {
		row[0].Draw(cs[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintln(os.Stderr, "ovsplot: wrote", path)
	return f.Close()
}
