package sim

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotBuckets is how many time buckets an occupancy plot averages over.
const plotBuckets = 1500

var (
	usefulColor   = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	startingColor = color.RGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0xff}
	heldColor     = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	policyColors  = []color.Color{
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	}
)

// WritePlots writes, into dir, one GPU-occupancy plot per policy (occupancy-POLICY), one
// CDF of queueing delay for all policies (queueing-cdf), the cumulative GPU-hours held
// by incomplete groups per policy (held-cumulative) and, when a policy predicted start
// times, the CDF of their error (start-error-cdf), each as PNG and SVG. worlds
// and sums are in the same order. It returns the files written.
func WritePlots(dir string, sums []Summary, worlds []*World, gpus int) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string, w, h vg.Length) error {
		for _, ext := range []string{"png", "svg"} {
			path := filepath.Join(dir, name+"."+ext)
			if err := p.Save(w, h, path); err != nil {
				return fmt.Errorf("write plot %s: %w", path, err)
			}
			files = append(files, path)
		}
		return nil
	}
	for i, w := range worlds {
		p, err := occupancyPlot(sums[i].Policy, w, gpus)
		if err != nil {
			return files, err
		}
		if err := save(p, "occupancy-"+sums[i].Policy, 8*vg.Inch, 3*vg.Inch); err != nil {
			return files, err
		}
	}
	p, err := cdfPlot(sums)
	if err != nil {
		return files, err
	}
	if err := save(p, "queueing-cdf", 6*vg.Inch, 4*vg.Inch); err != nil {
		return files, err
	}
	if p, err = heldPlot(sums, worlds); err != nil {
		return files, err
	}
	if err := save(p, "held-cumulative", 6*vg.Inch, 4*vg.Inch); err != nil {
		return files, err
	}
	if p, err = startErrorPlot(sums); err != nil || p == nil {
		return files, err
	}
	return files, save(p, "start-error-cdf", 6*vg.Inch, 4*vg.Inch)
}

// occupancyPlot stacks, over simulated days, the GPUs of training jobs, of whole groups
// still starting, and held by incomplete groups, each averaged per time bucket.
func occupancyPlot(policy string, w *World, gpus int) (*plot.Plot, error) {
	useful, starting, held := bucketed(w.Occupancy(), w.now, plotBuckets)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("GPU occupancy: %s (%d GPUs)", policy, gpus)
	p.X.Label.Text = "simulated days"
	p.Y.Label.Text = "GPUs"
	p.Y.Min, p.Y.Max = 0, float64(gpus)
	p.Legend.Top = true
	stack := []struct {
		name string
		c    color.Color
		xys  plotter.XYs
	}{
		{"held by incomplete groups", heldColor, sum3(useful, starting, held)},
		{"whole, starting", startingColor, sum3(useful, starting, nil)},
		{"useful (training)", usefulColor, useful},
	}
	for _, s := range stack {
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return nil, fmt.Errorf("occupancy plot of %s: %w", policy, err)
		}
		l.FillColor, l.Color, l.Width = s.c, s.c, vg.Points(0.5)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	return p, nil
}

// bucketed averages a step series over n equal buckets from Epoch to end, as XYs in days.
func bucketed(series []Occupancy, end time.Time, n int) (useful, starting, held plotter.XYs) {
	span := end.Sub(Epoch)
	if span <= 0 || len(series) == 0 {
		return plotter.XYs{{}}, plotter.XYs{{}}, plotter.XYs{{}}
	}
	width := span / time.Duration(n)
	if width <= 0 {
		width, n = time.Nanosecond, int(span)
	}
	acc := make([][3]float64, n)
	for i, pt := range series {
		to := end
		if i+1 < len(series) {
			to = series[i+1].At
		}
		for from := pt.At; from.Before(to); {
			b := min(int(from.Sub(Epoch)/width), n-1)
			bEnd := Epoch.Add(time.Duration(b+1) * width)
			if b == n-1 || bEnd.After(to) {
				bEnd = to
			}
			d := bEnd.Sub(from).Seconds()
			acc[b][0] += float64(pt.Useful) * d
			acc[b][1] += float64(pt.Starting) * d
			acc[b][2] += float64(pt.Held) * d
			from = bEnd
		}
	}
	useful, starting, held = make(plotter.XYs, n), make(plotter.XYs, n), make(plotter.XYs, n)
	for b := range acc {
		x := (time.Duration(b) * width).Hours() / 24
		w := width.Seconds()
		if b == n-1 {
			w = (span - time.Duration(b)*width).Seconds()
		}
		useful[b] = plotter.XY{X: x, Y: acc[b][0] / w}
		starting[b] = plotter.XY{X: x, Y: acc[b][1] / w}
		held[b] = plotter.XY{X: x, Y: acc[b][2] / w}
	}
	return useful, starting, held
}

func sum3(a, b, c plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(a))
	for i := range a {
		out[i] = plotter.XY{X: a[i].X, Y: a[i].Y + b[i].Y}
		if c != nil {
			out[i].Y += c[i].Y
		}
	}
	return out
}

// cdfPlot draws, per policy, the fraction of jobs whose queueing delay is at most x
// minutes, on a log axis; jobs never Ready keep their policy's curve below 1.
func cdfPlot(sums []Summary) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Queueing delay (submit → all workers Ready)"
	p.X.Label.Text = "minutes (log scale)"
	p.Y.Label.Text = "fraction of jobs"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	for i, s := range sums {
		if len(s.Delays) == 0 {
			continue
		}
		const points = 2000
		step := max(1, len(s.Delays)/points)
		var xys plotter.XYs
		for k := 0; k < len(s.Delays); k += step {
			xys = append(xys, plotter.XY{X: max(s.Delays[k].Minutes(), 0.01), Y: float64(k+1) / float64(s.Jobs)})
		}
		last := s.Delays[len(s.Delays)-1]
		xys = append(xys, plotter.XY{X: max(last.Minutes(), 0.01), Y: float64(len(s.Delays)) / float64(s.Jobs)})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("CDF of %s: %w", s.Policy, err)
		}
		l.Color, l.Width = policyColors[i%len(policyColors)], vg.Points(1.5)
		if strings.HasPrefix(s.Policy, "permit") {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(s.Policy, l)
	}
	return p, nil
}
