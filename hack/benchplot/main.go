// Command benchplot turns the records of the scale curves (make bench-curves, one JSON object per
// line) into a Markdown table and a PNG plot.
//
//	go run . -in ../../docs/bench/curves.jsonl -md ../../docs/bench/curves.md -png ../../docs/bench/curves.png
//
// It is a module of its own so that its font package stays out of the server's dependencies.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"log"
	"math"
	"os"
	"sort"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// record is one point (the fields of the e2e test's curveRecord).
type record struct {
	Series         string  `json:"series"`
	Size           int     `json:"size"`
	Shape          string  `json:"shape"`
	Kind           string  `json:"kind"`
	Mode           string  `json:"mode"`
	ApplySeconds   float64 `json:"applySeconds"`
	SettleSeconds  float64 `json:"settleSeconds"`
	DeleteSeconds  float64 `json:"deleteSeconds"`
	PolicyShare    float64 `json:"policyShare"`
	CreateP50Ms    float64 `json:"createP50Ms"`
	CPUPerWriteMs  float64 `json:"cpuPerWriteMs"`
	AddedP50Ms     float64 `json:"addedP50Ms"`
	AddedP99Ms     float64 `json:"addedP99Ms"`
	Rate8          float64 `json:"rate8"`
	BareRate8      float64 `json:"bareRate8"`
	RSSMiB         float64 `json:"rssMiB"`
	ResumeSeconds  float64 `json:"resumeSeconds"`
	RSSPerPodKiB   float64 `json:"rssPerPodKiB"`
	RolloutSeconds float64 `json:"rolloutSeconds"`
	IdealSeconds   float64 `json:"idealSeconds"`
	FloorSeconds   float64 `json:"floorSeconds"`
	MaxUnavailable int     `json:"maxUnavailable"`
}

func (r record) line() string { return r.Shape + "/" + r.Kind + "/" + r.Mode }

func main() {
	in := flag.String("in", "docs/bench/curves.jsonl", "records of make bench-curves")
	md := flag.String("md", "", "Markdown table to write (stdout when empty)")
	out := flag.String("png", "", "PNG plot to write (none when empty)")
	flag.Parse()
	recs, err := read(*in)
	if err != nil {
		log.Fatal(err)
	}
	table := markdown(recs)
	if *md == "" {
		fmt.Print(table)
	} else if err := os.WriteFile(*md, []byte(table), 0o644); err != nil {
		log.Fatal(err)
	}
	if *out != "" {
		if err := writePNG(*out, recs); err != nil {
			log.Fatal(err)
		}
	}
}

// read returns the records, the last one of each point winning (a point measured again).
func read(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byKey := map[string]record{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		k := fmt.Sprintf("%s/%d/%s", r.Series, r.Size, r.line())
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = r
	}
	out := make([]record, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Series != b.Series {
			return a.Series > b.Series // sets first
		}
		if a.line() != b.line() {
			return a.line() < b.line()
		}
		return a.Size < b.Size
	})
	return out, sc.Err()
}

func markdown(recs []record) string {
	var b strings.Builder
	b.WriteString("| SidecarSets | shape | kind | mode | apply s | settled s | delete s | policies serve | create p50 ms | kube-apiserver CPU ms/create | added p50 ms | added p99 ms | 8 clients /s (bare) | RSS MiB | new leader resumes s |\n")
	b.WriteString("| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range recs {
		if r.Series != "sets" {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %.1f | %.1f | %.1f | %.0f%% | %.1f | %.0f | %.2f | %.2f | %.0f (%.0f) | %.0f | %.1f |\n",
			r.Size, r.Shape, r.Kind, r.Mode, r.ApplySeconds, r.SettleSeconds, r.DeleteSeconds, 100*r.PolicyShare,
			r.CreateP50Ms, r.CPUPerWriteMs, r.AddedP50Ms, r.AddedP99Ms, r.Rate8, r.BareRate8, r.RSSMiB, r.ResumeSeconds)
	}
	b.WriteString("\n| pods | RSS MiB | RSS per pod KiB | rollout s | ideal s | ratio | floor s | ratio to floor | most unavailable (budget) |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range recs {
		if r.Series != "pods" {
			continue
		}
		most := "-" // not sampled by that run
		if r.MaxUnavailable > 0 {
			most = fmt.Sprintf("%d (%d)", r.MaxUnavailable, r.Size/10)
		}
		floor, ratio := "-", "-" // not measured by that run
		if r.FloorSeconds > 0 {
			floor, ratio = fmt.Sprintf("%.1f", r.FloorSeconds), fmt.Sprintf("%.2f", r.RolloutSeconds/r.FloorSeconds)
		}
		fmt.Fprintf(&b, "| %d | %.0f | %.2f | %.1f | %.0f | %.2f | %s | %s | %s |\n", r.Size, r.RSSMiB, r.RSSPerPodKiB, r.RolloutSeconds, r.IdealSeconds,
			r.RolloutSeconds/r.IdealSeconds, floor, ratio, most)
	}
	return b.String()
}

// panel is one chart: a value of each record of a series against its size.
type panel struct {
	title, series string
	value         func(record) float64
}

var panels = []panel{
	{"added pod-create p50 (ms), 5 select", "sets", func(r record) float64 { return r.AddedP50Ms }},
	{"8-client creates/s, 5 select", "sets", func(r record) float64 { return r.Rate8 }},
	{"kubectl apply (s)", "sets", func(r record) float64 { return r.ApplySeconds }},
	{"SidecarSet create p50 (ms)", "sets", func(r record) float64 { return r.CreateP50Ms }},
	{"kube-apiserver CPU per create (ms)", "sets", func(r record) float64 { return r.CPUPerWriteMs }},
	{"leader RSS (MiB)", "sets", func(r record) float64 { return r.RSSMiB }},
	{"new leader resumes (s)", "sets", func(r record) float64 { return r.ResumeSeconds }},
	{"rollout / ideal (budget x restart), by pods", "pods", func(r record) float64 { return r.RolloutSeconds / r.IdealSeconds }},
	{"rollout / floor (the writes alone), by pods", "pods", func(r record) float64 {
		if r.FloorSeconds == 0 {
			return math.NaN() // not measured by that run
		}
		return r.RolloutSeconds / r.FloorSeconds
	}},
	{"RSS per pod (KiB), by pods", "pods", func(r record) float64 { return r.RSSPerPodKiB }},
}

const (
	panelW, panelH = 400, 260
	cols           = 4
	margin         = 40
)

var palette = []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 0, 255}, {90, 90, 200, 255}}

func writePNG(path string, recs []record) error {
	lines := lineNames(recs)
	rows := (len(panels) + cols - 1) / cols
	legendH := 16 * ((len(lines)+2)/3 + 1)
	img := image.NewRGBA(image.Rect(0, 0, cols*panelW, rows*panelH+legendH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	for i, p := range panels {
		drawPanel(img, image.Pt((i%cols)*panelW, (i/cols)*panelH), p, recs, lines)
	}
	for i, l := range lines {
		x, y := 10+(i%3)*panelW*cols/3, rows*panelH+16+16*(i/3)
		fill(img, image.Rect(x, y-8, x+20, y-4), palette[i%len(palette)])
		text(img, x+26, y, l)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func lineNames(recs []record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		if r.Series == "sets" && !seen[r.line()] {
			seen[r.line()] = true
			out = append(out, r.line())
		}
	}
	return out
}

func drawPanel(img *image.RGBA, at image.Point, p panel, recs []record, lines []string) {
	text(img, at.X+margin, at.Y+14, p.title)
	plot := image.Rect(at.X+margin, at.Y+24, at.X+panelW-12, at.Y+panelH-30)
	groups := map[string][]record{}
	var sizes []int
	maxY := 0.0
	for _, r := range recs {
		if r.Series != p.series || math.IsNaN(p.value(r)) || math.IsInf(p.value(r), 0) {
			continue
		}
		k := r.line()
		if p.series == "pods" {
			k = "pods"
		}
		groups[k] = append(groups[k], r)
		sizes = append(sizes, r.Size)
		maxY = math.Max(maxY, p.value(r))
	}
	axes(img, plot)
	if len(sizes) == 0 {
		text(img, plot.Min.X+10, plot.Min.Y+20, "not measured")
		return
	}
	sort.Ints(sizes)
	lo, hi := math.Log10(float64(sizes[0])), math.Log10(float64(sizes[len(sizes)-1]))
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	maxY = niceCeil(maxY)
	xOf := func(size int) int {
		return plot.Min.X + 10 + int(float64(plot.Dx()-20)*(math.Log10(float64(size))-lo)/(hi-lo))
	}
	yOf := func(v float64) int { return plot.Max.Y - int(float64(plot.Dy())*v/maxY) }
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		y := yOf(v)
		fill(img, image.Rect(plot.Min.X-3, y, plot.Min.X, y+1), color.RGBA{0, 0, 0, 255})
		text(img, at.X+2, y+4, short(v))
	}
	for _, s := range uniq(sizes) {
		x := xOf(s)
		fill(img, image.Rect(x, plot.Max.Y, x+1, plot.Max.Y+3), color.RGBA{0, 0, 0, 255})
		text(img, x-10, plot.Max.Y+16, short(float64(s)))
	}
	for name, rs := range groups {
		c := color.RGBA{0, 0, 0, 255}
		for i, l := range lines {
			if l == name {
				c = palette[i%len(palette)]
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].Size < rs[j].Size })
		for i, r := range rs {
			x, y := xOf(r.Size), yOf(p.value(r))
			fill(img, image.Rect(x-2, y-2, x+3, y+3), c)
			if i > 0 {
				line(img, xOf(rs[i-1].Size), yOf(p.value(rs[i-1])), x, y, c)
			}
		}
	}
}

func uniq(xs []int) []int {
	var out []int
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	switch {
	case v >= 1000 && math.Mod(v, 1000) == 0:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 10 || v == 0:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

func axes(img *image.RGBA, r image.Rectangle) {
	black := color.RGBA{0, 0, 0, 255}
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Max.Y), black)
	fill(img, image.Rect(r.Min.X, r.Max.Y, r.Max.X, r.Max.Y+1), black)
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{C: c}, image.Point{}, draw.Src)
}

// line draws a 2-pixel line (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		img.SetRGBA(x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func text(img *image.RGBA, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
