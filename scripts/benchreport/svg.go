package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH                       = 720, 440
	marginL, marginR, marginT, marginB = 70, 190, 40, 50
)

// series is one line of the plot: a case at one transcript length.
type series struct {
	label  string
	color  string
	dashed bool
	points [][2]float64 // children, ms
}

// plotCases are the listing times drawn, with their colours: dsh's warm
// and cold listings and the warm listing's floor.
var plotCases = []struct {
	name, color string
	ms          func(*results, corpus) (float64, bool)
}{
	{"warm", "#1f77b4", dshMS("warm")},
	{"cold", "#d62728", dshMS("cold")},
	{"floor", "#7f7f7f", func(r *results, c corpus) (float64, bool) {
		m := r.get(c, "warm")
		return m.floorMS, m.present
	}},
}

func dshMS(name string) func(*results, corpus) (float64, bool) {
	return func(r *results, c corpus) (float64, bool) {
		m := r.get(c, name)
		return m.ms, m.present
	}
}

// listingSeries collects, per case and transcript length, the median
// listing time at each number of children, taken from the smallest store
// holding that corpus so that only the children vary along a line.
func listingSeries(res *results) []series {
	smallest := map[[2]int]corpus{}
	var lengths []int
	for _, c := range res.corpora {
		k := [2]int{c.children, c.events}
		s, ok := smallest[k]
		if !ok {
			if !containsInt(lengths, c.events) {
				lengths = append(lengths, c.events)
			}
		}
		if !ok || c.sessions < s.sessions {
			smallest[k] = c
		}
	}
	sort.Ints(lengths)
	var out []series
	for _, pc := range plotCases {
		for i, events := range lengths {
			s := series{label: fmt.Sprintf("%s, %d events", pc.name, events), color: pc.color, dashed: i > 0}
			for k, c := range smallest {
				if k[1] != events {
					continue
				}
				if ms, ok := pc.ms(res, c); ok && ms > 0 {
					s.points = append(s.points, [2]float64{float64(c.children), ms})
				}
			}
			sort.Slice(s.points, func(i, j int) bool { return s.points[i][0] < s.points[j][0] })
			if len(s.points) > 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// decades returns the powers of ten spanning [lo, hi].
func decades(lo, hi float64) (first, last int) {
	return int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
}

func writeSVG(w io.Writer, res *results) error {
	all := listingSeries(res)
	if len(all) == 0 {
		return fmt.Errorf("no listing measurements to plot")
	}
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range all {
		for _, p := range s.points {
			minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
			minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
		}
	}
	x0, x1 := decades(minX, maxX)
	y0, y1 := decades(minY, maxY)
	if x1 == x0 {
		x1++
	}
	if y1 == y0 {
		y1++
	}
	innerW, innerH := float64(plotW-marginL-marginR), float64(plotH-marginT-marginB)
	px := func(x float64) float64 {
		return marginL + (math.Log10(x)-float64(x0))/float64(x1-x0)*innerW
	}
	py := func(y float64) float64 {
		return marginT + innerH - (math.Log10(y)-float64(y0))/float64(y1-y0)*innerH
	}

	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(w, `<text x="%d" y="22" font-size="14" font-weight="bold">dsh list --parent: median time vs. children (log–log)</text>`+"\n", marginL)
	for d := x0; d <= x1; d++ {
		x := px(math.Pow(10, float64(d)))
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, marginT, x, marginT+innerH)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, marginT+innerH+16, group(int(math.Pow(10, float64(d)))))
	}
	for d := y0; d <= y1; d++ {
		y := py(math.Pow(10, float64(d)))
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, y, marginL+innerW, y)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, strconv.FormatFloat(math.Pow(10, float64(d)), 'g', -1, 64))
	}
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", marginL, marginT, innerW, innerH)
	fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">children of the parent</text>`+"\n", marginL+innerW/2, plotH-10)
	fmt.Fprintf(w, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">median ms</text>`+"\n", marginT+innerH/2)

	for i, s := range all {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="`, s.color, dash)
		for j, p := range s.points {
			if j > 0 {
				fmt.Fprint(w, " ")
			}
			fmt.Fprintf(w, "%.1f,%.1f", px(p[0]), py(p[1]))
		}
		fmt.Fprint(w, `"/>`+"\n")
		for _, p := range s.points {
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s children, %.1f ms</title></circle>`+"\n",
				px(p[0]), py(p[1]), s.color, s.label, group(int(p[0])), p[1])
		}
		ly := float64(marginT + 10 + 20*i)
		lx := float64(plotW - marginR + 15)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+28, ly, s.color, dash)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+34, ly+4, s.label)
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}
