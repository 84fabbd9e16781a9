package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"mezzo/sim/paper"
)

var (
	ours      = plotutil.Color(0)
	paperTone = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	kindColor = map[string]color.Color{paper.KindBatch: plotutil.Color(0), paper.KindGang: plotutil.Color(1),
		paper.KindElastic: plotutil.Color(2), paper.KindShort: plotutil.Color(3)}
)

// save writes plots, laid out in rows and columns, as one SVG.
func save(path string, w, h vg.Length, rows [][]*plot.Plot) error {
	img := vgsvg.New(w, h)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(rows), Cols: len(rows[0]), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for _, row := range rows {
		for _, p := range row {
			if p != nil {
				p.Legend.TextStyle.Font.Size = vg.Points(9)
			}
		}
	}
	cs := plot.Align(rows, t, dc)
	for i, row := range rows {
		for j, p := range row {
			if p != nil {
				p.Draw(cs[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintln(os.Stderr, "paperplot: wrote", path)
	return f.Close()
}

func bars(vs []float64, c color.Color, offset vg.Length) (*plotter.BarChart, error) {
	b, err := plotter.NewBarChart(plotter.Values(vs), vg.Points(14))
	if err != nil {
		return nil, err
	}
	b.Color, b.LineStyle.Width, b.Offset = c, 0, offset
	return b, nil
}

// markers draws the paper's values (NaN: not stated) at bar positions.
func markers(vs []float64, offset float64) (*plotter.Scatter, error) {
	var xys plotter.XYs
	for i, v := range vs {
		if !math.IsNaN(v) {
			xys = append(xys, plotter.XY{X: float64(i) + offset, Y: v})
		}
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle.Shape = draw.BoxGlyph{}
	s.GlyphStyle.Color = color.Black
	s.GlyphStyle.Radius = vg.Points(3.5)
	return s, nil
}

func hline(y, x0, x1 float64, c color.Color, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = c, vg.Points(1)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	return l, nil
}

// drawLocality is Fig. 8: locality and job time per scenario.
func drawLocality(dir, path string) error {
	r, err := load[paper.LocalityResult](path)
	if err != nil {
		return err
	}
	var names []string
	var loc, rel, paperLoc, paperRel []float64
	static := r.Scenarios[0].JobSeconds
	for _, s := range r.Scenarios {
		names = append(names, shortName(s.Name))
		loc = append(loc, 100*s.Locality)
		rel = append(rel, s.JobSeconds/static)
		pl, pr := paperLocality(s.Name)
		paperLoc, paperRel = append(paperLoc, pl), append(paperRel, pr)
	}
	p1 := plot.New()
	p1.Title.Text = "Data locality (Fig. 8)"
	p1.Y.Label.Text = "tasks local (%)"
	p1.Y.Min, p1.Y.Max = 0, 130
	p1.Y.Tick.Marker = upTo(100)
	b, err := bars(loc, ours, 0)
	if err != nil {
		return err
	}
	m, err := markers(paperLoc, 0)
	if err != nil {
		return err
	}
	p1.Add(b, m)
	p1.Legend.Add("mezzo", b)
	p1.Legend.Add("paper (§6.3 text)", m)
	p1.Legend.Top, p1.Legend.Left = true, true
	p1.NominalX(names...)
	p2 := plot.New()
	p2.Title.Text = "Mean job time, relative to static"
	p2.Y.Label.Text = "job time / static partitioning's"
	p2.Y.Min, p2.Y.Max = 0, 1.3
	p2.Y.Tick.Marker = upTo(1)
	b2, err := bars(rel, ours, 0)
	if err != nil {
		return err
	}
	m2, err := markers(paperRel, 0)
	if err != nil {
		return err
	}
	p2.Add(b2, m2)
	p2.NominalX(names...)
	return save(filepath.Join(dir, "fig8-locality.svg"), 22*vg.Centimeter, 9*vg.Centimeter, [][]*plot.Plot{{p1, p2}})
}

// paperLocality is what §6.3's text states for a scenario: locality %,
// and job time relative to static partitioning (NaN: not stated).
func paperLocality(name string) (loc, rel float64) {
	switch name {
	case "static partitioning":
		return 18, 1
	case "offers, 1s delay":
		return 90, math.NaN() // "above 90%"
	case "offers, 5s delay":
		return 95, 1 / 1.7 // "jobs run 1.7x faster"
	}
	return math.NaN(), math.NaN()
}

func shortName(s string) string {
	switch s {
	case "static partitioning":
		return "static"
	case "offers, no delay scheduling":
		return "no delay"
	}
	if len(s) > len("offers, ") && s[:len("offers, ")] == "offers, " {
		return s[len("offers, "):]
	}
	return s
}

// table4 is the paper's Table 4 speedup of the framework standing for
// each of our kinds (NaN: no counterpart in the macrobenchmark).
var table4 = map[string]float64{paper.KindBatch: 1.14, paper.KindGang: 0.96, paper.KindElastic: math.NaN(), paper.KindShort: math.NaN()}

// drawSharing is Table 4 (speedups), Fig. 5 (each kind's share over time,
// shared against static), Fig. 6 (the shared cluster's shares stacked)
// and Fig. 7 (utilization).
func drawSharing(dir, path string) error {
	r, err := load[paper.SharingResult](path)
	if err != nil {
		return err
	}
	// Table 4.
	var sp, pp []float64
	for _, k := range paper.Kinds {
		sp = append(sp, r.Speedup[k])
		pp = append(pp, table4[k])
	}
	p := plot.New()
	p.Title.Text = "Speedup from sharing (Table 4)"
	p.Y.Label.Text = "speedup (web service: demand met)"
	p.Y.Min = 0
	top := 1.0
	for i := range sp {
		top = math.Max(top, sp[i])
		if !math.IsNaN(pp[i]) {
			top = math.Max(top, pp[i])
		}
	}
	p.Y.Max = top * 1.35
	b, err := bars(sp, ours, 0)
	if err != nil {
		return err
	}
	m, err := markers(pp, 0)
	if err != nil {
		return err
	}
	one, err := hline(1, -0.5, float64(len(sp))-0.5, color.Black, true)
	if err != nil {
		return err
	}
	p.Add(b, m, one)
	p.Legend.Add("mezzo", b)
	p.Legend.Add("paper (Hadoop mix, Torque)", m)
	p.Legend.Top = true
	p.NominalX("batch", "gang (MPI)", "web service", "mezzo run")
	if err := save(filepath.Join(dir, "table4-speedup.svg"), 14*vg.Centimeter, 9*vg.Centimeter, [][]*plot.Plot{{p}}); err != nil {
		return err
	}

	// Fig. 5: per kind, shared vs static.
	var rows [][]*plot.Plot
	var row []*plot.Plot
	for _, k := range paper.Kinds {
		p := plot.New()
		p.Title.Text = kindTitle(k)
		p.X.Label.Text = "time (s)"
		p.Y.Label.Text = "share of cluster cpus"
		p.Y.Min, p.Y.Max = 0, 1.25
		p.Y.Tick.Marker = upTo(1)
		st, err := shareLine(r.Static, k, r.Static.TotalCPUs)
		if err != nil {
			return err
		}
		st.FillColor = color.RGBA{R: 0xcc, G: 0xcc, B: 0xcc, A: 0xff}
		st.Color = paperTone
		sh, err := shareLine(r.Shared, k, r.Shared.TotalCPUs)
		if err != nil {
			return err
		}
		sh.Color, sh.Width = kindColor[k], vg.Points(1.5)
		q, err := hline(0.25, 0, math.Max(lastT(r.Static), lastT(r.Shared)), color.Black, true)
		if err != nil {
			return err
		}
		p.Add(st, sh, q)
		p.Legend.Add("static quarter", st)
		p.Legend.Add("shared", sh)
		p.Legend.Top = true
		row = append(row, p)
		if len(row) == 2 {
			rows, row = append(rows, row), nil
		}
	}
	if err := save(filepath.Join(dir, "fig5-shares.svg"), 22*vg.Centimeter, 16*vg.Centimeter, rows); err != nil {
		return err
	}

	// Fig. 6: the shared run's shares, stacked.
	p6 := plot.New()
	p6.Title.Text = "Shares of the shared cluster (Fig. 6)"
	p6.X.Label.Text = "time (s)"
	p6.Y.Label.Text = "share of cluster cpus"
	p6.Y.Min, p6.Y.Max = 0, 1.45
	p6.Y.Tick.Marker = upTo(1)
	cum := make([]float64, len(r.Shared.Samples))
	var layers []*plotter.Line
	for _, k := range paper.Kinds {
		var xys plotter.XYs
		for i, s := range r.Shared.Samples {
			cum[i] += s.CPUs[k] / r.Shared.TotalCPUs
			xys = append(xys, plotter.XY{X: s.Seconds, Y: cum[i]})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.FillColor, l.Color = kindColor[k], kindColor[k]
		layers = append(layers, l)
	}
	// Highest first, so each layer's fill shows above the one below.
	for i := len(layers) - 1; i >= 0; i-- {
		p6.Add(layers[i])
	}
	for i, k := range paper.Kinds {
		p6.Legend.Add(kindTitle(k), layers[i])
	}
	p6.Legend.Top = true
	// Fig. 7: utilization over time, both runs.
	p7 := plot.New()
	p7.Title.Text = "Cluster cpus in use (Fig. 7)"
	p7.X.Label.Text = "time (s)"
	p7.Y.Label.Text = "fraction of cluster cpus"
	p7.Y.Min, p7.Y.Max = 0, 1.3
	p7.Y.Tick.Marker = upTo(1)
	for i, run := range []paper.SharingRun{r.Static, r.Shared} {
		var xys plotter.XYs
		for _, s := range run.Samples {
			tot := 0.0
			for _, v := range s.CPUs {
				tot += v
			}
			xys = append(xys, plotter.XY{X: s.Seconds, Y: tot / run.TotalCPUs})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = plotutil.Color(i+4), vg.Points(1.5)
		name := []string{"static quarters", "shared"}[i]
		p7.Add(l)
		p7.Legend.Add(fmt.Sprintf("%s (mean %.0f%%)", name, 100*run.Utilization), l)
	}
	p7.Legend.Top = true
	return save(filepath.Join(dir, "fig6-fig7-shared.svg"), 22*vg.Centimeter, 9*vg.Centimeter, [][]*plot.Plot{{p6, p7}})
}

func kindTitle(k string) string {
	return map[string]string{paper.KindBatch: "batch (Hadoop mix)", paper.KindGang: "gang (Torque/MPI)",
		paper.KindElastic: "elastic web service", paper.KindShort: "mezzo run (short tasks)"}[k]
}

func lastT(r paper.SharingRun) float64 {
	if len(r.Samples) == 0 {
		return 1
	}
	return r.Samples[len(r.Samples)-1].Seconds
}

func shareLine(r paper.SharingRun, kind string, total float64) (*plotter.Line, error) {
	xys := plotter.XYs{}
	for _, s := range r.Samples {
		xys = append(xys, plotter.XY{X: s.Seconds, Y: s.CPUs[kind] / total})
	}
	if len(xys) == 0 {
		xys = append(xys, plotter.XY{})
	}
	return plotter.NewLine(xys)
}

// drawOverhead is Fig. 10: probe latency against cluster size, both
// axes logarithmic (the sizes span 50×, the latencies more).
func drawOverhead(dir, path string) error {
	r, err := load[paper.OverheadResult](path)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = "Time to launch a task vs cluster size (Fig. 10)"
	p.X.Label.Text = "emulated agents"
	p.Y.Label.Text = "SUBSCRIBE to TASK_RUNNING (ms)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var xs []plot.Tick
	series := []struct {
		name string
		get  func(paper.OverheadPoint) float64
	}{{"p50", func(q paper.OverheadPoint) float64 { return q.P50MS }},
		{"p99 (the slowest of the probes)", func(q paper.OverheadPoint) float64 { return q.P99MS }},
		{"mean", func(q paper.OverheadPoint) float64 { return q.MeanMS }}}
	xmin, xmax, ymax := math.Inf(1), 0.0, 0.0
	for _, q := range r.Points {
		x := float64(q.Agents)
		xs = append(xs, plot.Tick{Value: x, Label: strconv.FormatFloat(x/1000, 'f', -1, 64) + "k"})
		xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, q.MaxMS)
	}
	p.X.Tick.Marker = plot.ConstantTicks(xs)
	for i, s := range series {
		var xys plotter.XYs
		for _, q := range r.Points {
			xys = append(xys, plotter.XY{X: float64(q.Agents), Y: math.Max(s.get(q), 1)})
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		p.Add(l, sc)
		p.Legend.Add("mezzo "+s.name, l, sc)
	}
	for _, ref := range []struct {
		ms   float64
		name string
	}{{100, "target: p99 under 100 ms"}, {1000, "the paper: under 1,000 ms"}} {
		l, err := hline(ref.ms, xmin, xmax, color.Black, true)
		if err != nil {
			return err
		}
		if ref.ms == 1000 {
			l.Color = paperTone
		}
		p.Add(l)
		p.Legend.Add(ref.name, l)
	}
	p.X.Min, p.X.Max = xmin*0.8, xmax*1.25
	p.Y.Min, p.Y.Max = 5, math.Max(ymax, 1000)*8
	p.Legend.Top, p.Legend.Left = true, true
	return save(filepath.Join(dir, "fig10-overhead.svg"), 16*vg.Centimeter, 11*vg.Centimeter, [][]*plot.Plot{{p}})
}

// drawFailover is §6.6: time to recover against cluster size, with the
// paper's 4–8 s band.
func drawFailover(dir, path string) error {
	r, err := load[paper.FailoverResult](path)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = "Master failover: until every agent and framework is back (§6.6)"
	p.X.Label.Text = "emulated agents"
	p.Y.Label.Text = "seconds"
	xmax := 0.0
	var mttr, election plotter.XYs
	for _, q := range r.Points {
		mttr = append(mttr, plotter.XY{X: float64(q.Agents), Y: q.MTTRMS / 1000})
		election = append(election, plotter.XY{X: float64(q.Agents), Y: q.ElectionMS / 1000})
		xmax = math.Max(xmax, float64(q.Agents))
	}
	band, err := plotter.NewPolygon(plotter.XYs{{X: 200, Y: paper.PaperMTTR[0]}, {X: 4000, Y: paper.PaperMTTR[0]},
		{X: 4000, Y: paper.PaperMTTR[1]}, {X: 200, Y: paper.PaperMTTR[1]}})
	if err != nil {
		return err
	}
	band.Color = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
	band.LineStyle.Width = 0
	p.Add(band)
	p.Legend.Add("paper: 4–8 s (200–4,000 agents)", band)
	for i, s := range []struct {
		name string
		xys  plotter.XYs
	}{{"mezzo: MTTR", mttr}, {"mezzo: new leader elected", election}} {
		l, sc, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	// Logarithmic: a recovery that stormed (leadership lost during the
	// re-registrations) takes minutes, the others seconds.
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	ymax := paper.PaperMTTR[1]
	for _, q := range r.Points {
		ymax = math.Max(ymax, q.MTTRMS/1000)
	}
	p.Y.Min, p.Y.Max = 0.02, ymax*20
	p.X.Min, p.X.Max = 0, xmax*1.05
	p.X.Tick.Marker = thousands{}
	p.Legend.Top, p.Legend.Left = true, true
	return save(filepath.Join(dir, "failover.svg"), 16*vg.Centimeter, 11*vg.Centimeter, [][]*plot.Plot{{p}})
}

// upTo keeps the default ticks up to max: an axis of fractions gets
// headroom for its legend without ticks above 1.
type upTo float64

func (u upTo) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value <= float64(u)+1e-9 {
			out = append(out, t)
		}
	}
	return out
}

// thousands labels an axis of agent counts "10k".
type thousands struct{}

func (thousands) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value/1000, 'f', -1, 64) + "k"
		}
		out = append(out, t)
	}
	return out
}
