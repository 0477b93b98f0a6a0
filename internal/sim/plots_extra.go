package sim

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// heldPlot draws, per policy, the GPU-hours held by incomplete groups so far against
// days since the start: a month's total at a glance, where an occupancy plot's band of
// held GPUs is too thin to see.
func heldPlot(sums []Summary, worlds []*World) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "GPU-hours held by incomplete groups, cumulative"
	p.X.Label.Text = "days"
	p.Y.Label.Text = "GPU-hours"
	p.Legend.Top, p.Legend.Left = true, true
	for i, w := range worlds {
		series := w.Occupancy()
		var xys plotter.XYs
		total := 0.0
		step := max(1, len(series)/2000)
		for k := 1; k < len(series); k++ {
			total += float64(series[k-1].Held) * series[k].At.Sub(series[k-1].At).Hours()
			if k%step == 0 || k == len(series)-1 {
				xys = append(xys, plotter.XY{X: series[k].At.Sub(Epoch).Hours() / 24, Y: total})
			}
		}
		if len(xys) == 0 {
			xys = plotter.XYs{{X: 0, Y: 0}}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("held GPU-hours of %s: %w", sums[i].Policy, err)
		}
		l.Color, l.Width = policyColors[i%len(policyColors)], vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%.1f)", sums[i].Policy, total), l)
	}
	return p, nil
}

// startErrorPlot draws, per policy that predicts starts, the fraction of predicted
// jobs whose start was within x minutes of the prediction (magnitude, on a log axis;
// errors under a second are drawn at one), or nil when no policy predicted any.
func startErrorPlot(sums []Summary) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Expected-start error (|actual − first predicted start|)"
	p.X.Label.Text = "minutes (log scale)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Label.Text = "fraction of predicted jobs"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	drawn := false
	for i, s := range sums {
		n := len(s.StartErrors)
		if n == 0 {
			continue
		}
		drawn = true
		const points = 2000
		step := max(1, n/points)
		var xys plotter.XYs
		for k := 0; k < n; k += step {
			xys = append(xys, plotter.XY{X: max(s.StartErrors[k].Abs().Minutes(), 1.0/60), Y: float64(k+1) / float64(n)})
		}
		xys = append(xys, plotter.XY{X: max(s.StartErrors[n-1].Abs().Minutes(), 1.0/60), Y: 1})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("start error of %s: %w", s.Policy, err)
		}
		l.Color, l.Width = policyColors[i%len(policyColors)], vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%d jobs)", s.Policy, n), l)
	}
	if !drawn {
		return nil, nil
	}
	return p, nil
}
