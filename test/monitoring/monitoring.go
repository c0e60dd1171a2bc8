// Package monitoring reads the chart's monitoring bundle (the alerts of
// charts/sidecarset-apiserver/monitoring/alerts.yaml and the Grafana dashboard
// charts/sidecarset-apiserver/dashboards/sidecarset-apiserver.json) with Prometheus' own parsers:
// rule files with model/rulefmt, which also parses every expression and annotation template, and
// each dashboard query with promql/parser. It extracts the metric names every expression reads, so
// that its test can keep artifacts/monitoring/metric-names.txt in step with them; test/e2e reads
// that file and checks each name this server or its etcd should expose against the running ones.
//
// It is a module of its own: github.com/prometheus/prometheus requires versions of libraries that
// the main module does not pin, and only this test needs it.
package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// Paths of the bundle, relative to the repository's root.
const (
	AlertsFile    = "charts/sidecarset-apiserver/monitoring/alerts.yaml"
	DashboardFile = "charts/sidecarset-apiserver/dashboards/sidecarset-apiserver.json"
	RunbookFile   = "docs/runbook.md"
	NamesFile     = "artifacts/monitoring/metric-names.txt"
)

// RunbookBaseURL is the runbook's address in alerts.yaml; the chart replaces it with
// metrics.prometheusRule.runbookBaseURL.
const RunbookBaseURL = "https://github.com/sidecarset/apiserver/blob/main/docs/runbook.md"

// Origin is what exposes a metric.
type Origin string

// The origins of the metrics the bundle reads: this server and its etcd (checked by test/e2e
// against the running ones), and the sources outside this project, which that test skips.
const (
	Server           Origin = "server"
	Etcd             Origin = "etcd"
	KubeAPIServer    Origin = "kube-apiserver"
	KubeStateMetrics Origin = "kube-state-metrics"
)

// Query is one PromQL expression of the bundle and where it is.
type Query struct {
	Where string // "alert NAME", "panel TITLE (A)", "variable NAME"
	Expr  string
}

// NewParser returns the PromQL parser Prometheus uses by default.
func NewParser() parser.Parser { return parser.NewParser(parser.Options{}) }

// LoadAlerts parses the rule file at path as Prometheus loads one (unknown fields refused,
// every expression parsed, every annotation and label template parsed).
func LoadAlerts(path string, p parser.Parser) (*rulefmt.RuleGroups, error) {
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "\n"))
	}
	return groups, nil
}

// AlertQueries returns the expression of every rule of groups.
func AlertQueries(groups *rulefmt.RuleGroups) []Query {
	var out []Query
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := "alert " + r.Alert
			if r.Record != "" {
				name = "record " + r.Record
			}
			out = append(out, Query{Where: name, Expr: r.Expr})
		}
	}
	return out
}

// Dashboard is the part of a Grafana dashboard that holds queries.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; a row holds its panels when collapsed.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	Targets    []Target    `json:"targets"`
	Panels     []Panel     `json:"panels"`
}

// Datasource names a panel's or variable's data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

// Variable is a templating variable; a query variable's query is a string or an object with one.
type Variable struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

// LoadDashboard reads a dashboard's JSON, refusing unknown top-level shapes it cannot read.
func LoadDashboard(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// AllPanels returns the dashboard's panels, those inside rows included, rows excluded.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// labelValues is Grafana's label_values(SELECTOR, LABEL) variable query.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

// Queries returns the PromQL of every panel target and of every query variable (the selector of
// label_values), with Grafana's interval variables replaced by a duration so that Prometheus'
// parser reads them as Grafana sends them. Label values naming variables ("$namespace") are left:
// they are strings to the parser.
func (d *Dashboard) Queries() ([]Query, error) {
	var out []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			out = append(out, Query{Where: fmt.Sprintf("panel %q (%s)", p.Title, t.RefID), Expr: grafanaIntervals.Replace(t.Expr)})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				return nil, fmt.Errorf("variable %s: query %s is neither a string nor an object with one", v.Name, v.Query)
			}
		}
		m := labelValues.FindStringSubmatch(strings.TrimSpace(q.Query))
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(SELECTOR, LABEL)", v.Name, q.Query)
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: m[1]})
	}
	return out, nil
}

// grafanaIntervals are the interval variables Grafana fills in before sending a query.
var grafanaIntervals = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// MetricNames parses expr and returns the metric names its selectors read, sorted, each once.
// A selector without a metric name (matching on labels only, or on __name__ by regular
// expression) is an error: the names are what the bundle is checked against.
func MetricNames(p parser.Parser, expr string) ([]string, error) {
	if strings.Contains(expr, "$__") {
		return nil, fmt.Errorf("%q: a Grafana variable Prometheus cannot parse", expr)
	}
	node, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	var bad []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			bad = append(bad, vs.String())
			return nil
		}
		names[name] = true
		return nil
	})
	if len(bad) > 0 {
		return nil, fmt.Errorf("selectors without a metric name: %s", strings.Join(bad, ", "))
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// NamesFileContent is the content of NamesFile for the names and their origins: a header, then
// "NAME ORIGIN" lines sorted by name.
func NamesFileContent(origins map[string]Origin) []byte {
	var b bytes.Buffer
	b.WriteString(`# The metric names that the alerts and the dashboard read:
#   ` + AlertsFile + `
#   ` + DashboardFile + `
# each with what exposes it: server (this server's /metrics), etcd (its etcd's /metrics), or a
# source outside this project, kube-apiserver or kube-state-metrics. Written by test/monitoring
# (cd test/monitoring && go test . -update), which fails while this file is out of date;
# test/e2e (TestMonitoringMetricsExposed) checks that the running server and its etcd expose
# every server and etcd name, and skips the others.
`)
	names := make([]string, 0, len(origins))
	for n := range origins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, origins[n])
	}
	return b.Bytes()
}

// Section is a section of the runbook: a level-2 heading and what follows until the next.
type Section struct {
	Title, Anchor string
	Body          string
}

// RunbookSections returns the level-2 sections of a Markdown runbook by anchor, as GitHub makes
// anchors of headings (lower case, punctuation but hyphens dropped, spaces as hyphens).
func RunbookSections(markdown []byte) map[string]Section {
	out := map[string]Section{}
	var cur *Section
	flush := func() {
		if cur != nil {
			out[cur.Anchor] = *cur
		}
	}
	inCode := false
	for _, line := range strings.Split(string(markdown), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if title, ok := strings.CutPrefix(line, "## "); ok && !inCode {
			flush()
			cur = &Section{Title: strings.TrimSpace(title), Anchor: Anchor(title)}
			continue
		}
		if cur != nil {
			cur.Body += line + "\n"
		}
	}
	flush()
	return out
}

var notAnchor = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)

// Anchor is GitHub's anchor of a Markdown heading.
func Anchor(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = notAnchor.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// Root returns the repository's root: the directory above this module's.
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := filepath.Join(wd, "..", "..")
	if _, err := os.Stat(filepath.Join(root, AlertsFile)); err != nil {
		return "", fmt.Errorf("the repository's root: %w", err)
	}
	return root, nil
}

// OneLine returns expr on one line, its comments (from a # outside a string to the end of the
// line) removed: the form a promqltest eval line takes.
func OneLine(expr string) string {
	var b strings.Builder
	var quote rune
	comment, escaped := false, false
	for _, r := range expr {
		switch {
		case comment:
			if r == '\n' {
				comment = false
				b.WriteRune(r)
			}
			continue
		case escaped:
			escaped = false
		case quote != 0 && r == '\\' && quote != '`':
			escaped = true
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\'' || r == '`'):
			quote = r
		case quote == 0 && r == '#':
			comment = true
			continue
		}
		b.WriteRune(r)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// Sample is one sample of a Prometheus text exposition, with its family's type.
type Sample struct {
	Labels labels.Labels
	Value  float64
	// Counter is whether the sample grows (a counter's, or a histogram's or summary's bucket,
	// sum or count); the others are gauges.
	Counter bool
}

// ParseExposition reads the samples of a Prometheus text exposition (what a /metrics endpoint
// serves): "# TYPE" lines give each family's type, sample lines are "METRIC{LABELS} VALUE" (no
// timestamps); other comments and blank lines are skipped.
func ParseExposition(data []byte, p parser.Parser) ([]Sample, error) {
	types := map[string]string{}
	var out []Sample
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				types[f[0]] = f[1]
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		at := strings.LastIndexByte(line, ' ')
		if at < 0 {
			return nil, fmt.Errorf("line %d: %q is not METRIC VALUE", i+1, line)
		}
		lset, err := p.ParseMetric(line[:at])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		v, err := strconv.ParseFloat(line[at+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		name := lset.Get(labels.MetricName)
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && types[base] != "" {
				family = base
			}
		}
		t, ok := types[family]
		if !ok {
			return nil, fmt.Errorf("line %d: %s has no # TYPE line", i+1, name)
		}
		out = append(out, Sample{Labels: lset, Value: v, Counter: t != "gauge" && t != "untyped"})
	}
	return out, nil
}

// LoadScript is a promqltest load command that has each sample's series scraped every minute
// for steps minutes: a gauge at its value throughout, a counter at 0 until the last scrape,
// which reads its value (so that a rate over the last minutes sees all of it).
func LoadScript(samples []Sample, steps int) string {
	var b strings.Builder
	b.WriteString("load 1m\n")
	for _, s := range samples {
		v := strconv.FormatFloat(s.Value, 'g', -1, 64)
		if s.Counter {
			fmt.Fprintf(&b, "  %s 0x%d %s\n", s.Labels.String(), steps-1, v)
		} else {
			fmt.Fprintf(&b, "  %s %sx%d\n", s.Labels.String(), v, steps)
		}
	}
	return b.String()
}

// Selectors returns the matchers of every vector selector of expr (the metric name's among them).
func Selectors(p parser.Parser, expr string) ([][]*labels.Matcher, error) {
	node, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out [][]*labels.Matcher
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs.LabelMatchers)
		}
		return nil
	})
	return out, nil
}
