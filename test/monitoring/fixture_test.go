package monitoring

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
)

// scrapeFile is a real kube-apiserver's /metrics, the admission families (its header says how it
// was made).
const scrapeFile = "testdata/kube-apiserver-admission.prom"

// scrapeSteps is how many minutes the scrape's series are loaded for (LoadScript).
const scrapeSteps = 10

func scrape(t *testing.T) []Sample {
	t.Helper()
	data, err := os.ReadFile(scrapeFile)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := ParseExposition(data, NewParser())
	if err != nil {
		t.Fatalf("%s: %v", scrapeFile, err)
	}
	return samples
}

// query evaluates expr at the end of the loaded scrape and returns each result's labels.
func query(t *testing.T, st storage.Storage, expr string) []string {
	t.Helper()
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	q, err := engine.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(0, 0).Add(scrapeSteps*time.Minute))
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%q: %v", expr, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	out := []string{}
	for _, s := range vec {
		out = append(out, s.Metric.String())
	}
	sort.Strings(out)
	return out
}

// TestKubeAPIServerSelectorsMatchScrape: every metric the bundle reads of kube-apiserver is in
// the scrape, and every selector of such a metric in the alerts and the dashboard selects at
// least one of its series there: the metric names, label names and label values (the webhooks'
// and policies' names, error types, operations) are those a real kube-apiserver gives.
func TestKubeAPIServerSelectorsMatchScrape(t *testing.T) {
	samples := scrape(t)
	names := map[string]bool{}
	for _, s := range samples {
		names[s.Labels.Get(labels.MetricName)] = true
	}
	for n, o := range origins {
		if o == KubeAPIServer && !names[n] {
			t.Errorf("%s: read from kube-apiserver but not in %s", n, scrapeFile)
		}
	}
	queries := AlertQueries(alerts(t))
	dq, err := dashboard(t).Queries()
	if err != nil {
		t.Fatal(err)
	}
	p := NewParser()
	for _, q := range append(queries, dq...) {
		sels, err := Selectors(p, q.Expr)
		if err != nil {
			t.Fatalf("%s: %v", q.Where, err)
		}
		for _, ms := range sels {
			if origins[metricName(ms)] != KubeAPIServer {
				continue
			}
			if !selectsAny(ms, samples) {
				t.Errorf("%s: %s selects none of the series of %s", q.Where, matchersString(ms), scrapeFile)
			}
		}
	}
}

func metricName(ms []*labels.Matcher) string {
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

func selectsAny(ms []*labels.Matcher, samples []Sample) bool {
	for _, s := range samples {
		all := true
		for _, m := range ms {
			all = all && m.Matches(s.Labels.Get(m.Name))
		}
		if all {
			return true
		}
	}
	return false
}

func matchersString(ms []*labels.Matcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// TestAlertsOnKubeAPIServerScrape evaluates the alerts that read kube-apiserver alone on the
// scrape's series (each counter grown from 0 to its value in the last minute): what the scrape
// recorded fires exactly the alerts it should, for this server's objects only. The `for` of each
// alert is not evaluated: SidecarSetPolicySlow's 15 minutes are what keep the one slow first
// mutation after kube-apiserver starts (0.37 s, one of the 4 sidecarsets-app-v0 made) from
// firing it.
func TestAlertsOnKubeAPIServerScrape(t *testing.T) {
	want := map[string][]string{
		// Calls of 2 to 5 ms: nowhere near 60% of the timeouts.
		"SidecarSetWebhookLatencyNearTimeout": {},
		// The pod created in default while the server was stopped: a 503, failing closed.
		"SidecarSetWebhookRefusingPods": {`{name="sidecarinjection.admission.kruise.io"}`},
		// The pod with a malformed hash annotation: denied, 422.
		"SidecarSetWebhookDenyingPods": {`{name="sidecarinjection.admission.kruise.io", rejection_code="422"}`},
		// The pod created in kube-system while the server was stopped.
		"SidecarSetWebhookFailingOpen": {`{name="sidecarinjection-system.admission.kruise.io"}`},
		// The test's policy whose mutation fails (the server's own never failed).
		"SidecarSetPolicyRefusingPods": {`{policy="sidecarsets-fixture-mutation"}`},
		"SidecarSetPolicySlow":         {`{policy="sidecarsets-app-v0"}`},
		// The test's policy whose match condition fails.
		"SidecarSetMatchConditionErrors": {`{kind="policy", name="sidecarsets-fixture-condition"}`},
		// Scraped seconds after the server stopped: kube-apiserver still had its APIServices
		// Available.
		"SidecarSetAPIServiceUnavailable": {},
	}
	st := promqltest.LoadedStorage(t, LoadScript(scrape(t), scrapeSteps))
	p := NewParser()
	for _, g := range alerts(t).Groups {
		for _, r := range g.Rules {
			names, err := MetricNames(p, r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			onlyKubeAPIServer := true
			for _, n := range names {
				onlyKubeAPIServer = onlyKubeAPIServer && origins[n] == KubeAPIServer
			}
			w, ok := want[r.Alert]
			switch {
			case !onlyKubeAPIServer:
				continue
			case !ok:
				t.Errorf("alert %s reads kube-apiserver alone: say here what the scrape fires", r.Alert)
				continue
			}
			if diff := cmp.Diff(w, query(t, st, r.Expr)); diff != "" {
				t.Errorf("alert %s on %s (-want +got):\n%s", r.Alert, scrapeFile, diff)
			}
			delete(want, r.Alert)
		}
	}
	for a := range want {
		t.Errorf("alert %s: not in %s, or reads more than kube-apiserver", a, AlertsFile)
	}
}

// TestDashboardPodAdmission: on the scrape, each panel of the dashboard's pod admission row
// shows what kube-apiserver recorded of this server's webhooks and policies, and of no one
// else's.
func TestDashboardPodAdmission(t *testing.T) {
	want := map[string][]string{
		"Webhook latency (p99)": {`{name="sidecarinjection-system.admission.kruise.io"}`, `{name="sidecarinjection.admission.kruise.io"}`},
		"Webhook calls": {
			`{code="200", name="sidecarinjection-system.admission.kruise.io", rejected="false"}`,
			`{code="200", name="sidecarinjection.admission.kruise.io", rejected="false"}`,
			`{code="422", name="sidecarinjection.admission.kruise.io", rejected="true"}`,
			`{code="503", name="sidecarinjection-system.admission.kruise.io", rejected="false"}`,
			`{code="503", name="sidecarinjection.admission.kruise.io", rejected="true"}`,
		},
		"Webhook rejections and fail-open": {
			`{error_type="calling_webhook_error", name="sidecarinjection.admission.kruise.io", rejection_code="503"}`,
			`{error_type="no_error", name="sidecarinjection.admission.kruise.io", rejection_code="422"}`,
			`{name="sidecarinjection-system.admission.kruise.io"}`,
		},
		"Policy mutations": {
			`{error_type="invalid_error", policy="sidecarsets-fixture-mutation"}`,
			`{error_type="no_error", policy="sidecarsets-app-v0"}`,
		},
		"Policy mutation latency (p99)": {`{policy="sidecarsets-app-v0"}`, `{policy="sidecarsets-fixture-mutation"}`},
		"Match condition errors":        {`{kind="policy", name="sidecarsets-fixture-condition"}`},
	}
	st := promqltest.LoadedStorage(t, LoadScript(scrape(t), scrapeSteps))
	for _, panel := range dashboard(t).AllPanels() {
		w, ok := want[panel.Title]
		if !ok {
			continue
		}
		delete(want, panel.Title)
		var got []string
		for _, target := range panel.Targets {
			got = append(got, query(t, st, grafanaIntervals.Replace(target.Expr))...)
		}
		sort.Strings(got)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("panel %q on %s (-want +got):\n%s", panel.Title, scrapeFile, diff)
		}
	}
	for title := range want {
		t.Errorf("no panel %q", title)
	}
}

// TestDashboardRequestsWebhook: the server's request panels show the injection webhook's reviews
// (group admission.kruise.io) beside the SidecarSet requests, and nothing of other groups.
func TestDashboardRequestsWebhook(t *testing.T) {
	st := promqltest.LoadedStorage(t, `
load 1m
  apiserver_request_total{job="sidecarset-apiserver", namespace="ns", code="201", group="admission.kruise.io", resource="sidecarinjections", verb="POST", version="v1"} 0+60x10
  apiserver_request_total{job="sidecarset-apiserver", namespace="ns", code="200", group="apps.kruise.io", resource="sidecarsets", verb="LIST", version="v1alpha1"} 0+60x10
  apiserver_request_total{job="sidecarset-apiserver", namespace="ns", code="304", group="", resource="", verb="GET", version=""} 0+60x10
  apiserver_request_duration_seconds_bucket{job="sidecarset-apiserver", namespace="ns", group="admission.kruise.io", resource="sidecarinjections", verb="POST", version="v1", le="0.05"} 0+60x10
  apiserver_request_duration_seconds_bucket{job="sidecarset-apiserver", namespace="ns", group="admission.kruise.io", resource="sidecarinjections", verb="POST", version="v1", le="+Inf"} 0+60x10
  apiserver_request_duration_seconds_bucket{job="sidecarset-apiserver", namespace="ns", group="apps.kruise.io", resource="sidecarsets", verb="LIST", version="v1alpha1", le="0.05"} 0+60x10
  apiserver_request_duration_seconds_bucket{job="sidecarset-apiserver", namespace="ns", group="apps.kruise.io", resource="sidecarsets", verb="LIST", version="v1alpha1", le="+Inf"} 0+60x10
  apiserver_request_duration_seconds_bucket{job="sidecarset-apiserver", namespace="ns", group="", resource="", verb="GET", version="", le="0.05"} 0+60x10
  apiserver_request_duration_seconds_bucket{job="sidecarset-apiserver", namespace="ns", group="", resource="", verb="GET", version="", le="+Inf"} 0+60x10
`)
	want := map[string][]string{
		"Requests":              {`{code="200", resource="sidecarsets", verb="LIST"}`, `{code="201", resource="sidecarinjections", verb="POST"}`},
		"Request latency (p99)": {`{resource="sidecarinjections", verb="POST"}`, `{resource="sidecarsets", verb="LIST"}`},
	}
	vars := strings.NewReplacer("$namespace", "ns")
	for _, panel := range dashboard(t).AllPanels() {
		w, ok := want[panel.Title]
		if !ok {
			continue
		}
		delete(want, panel.Title)
		if diff := cmp.Diff(w, query(t, st, vars.Replace(grafanaIntervals.Replace(panel.Targets[0].Expr)))); diff != "" {
			t.Errorf("panel %q (-want +got):\n%s", panel.Title, diff)
		}
	}
	for title := range want {
		t.Errorf("no panel %q", title)
	}
}

// TestParseExposition checks the reading of a text exposition and its load script.
func TestParseExposition(t *testing.T) {
	data := []byte(`# HELP h a histogram
# TYPE h histogram
h_bucket{le="+Inf",name="a"} 3
h_sum{name="a"} 0.5
# TYPE g gauge
g{name="x"} 1
`)
	samples, err := ParseExposition(data, NewParser())
	if err != nil {
		t.Fatal(err)
	}
	want := "load 1m\n" +
		"  {__name__=\"h_bucket\", le=\"+Inf\", name=\"a\"} 0x9 3\n" +
		"  {__name__=\"h_sum\", name=\"a\"} 0x9 0.5\n" +
		"  {__name__=\"g\", name=\"x\"} 1x10\n"
	if diff := cmp.Diff(want, LoadScript(samples, 10)); diff != "" {
		t.Errorf("load script (-want +got):\n%s", diff)
	}
	if _, err := ParseExposition([]byte("x 1\n"), NewParser()); err == nil || !strings.Contains(err.Error(), "no # TYPE") {
		t.Errorf("a sample without its family's type: error %v", err)
	}
}

// TestOneLine checks the removal of comments and line breaks.
func TestOneLine(t *testing.T) {
	got := OneLine("a{x=\"#not\"} > 0.6 * 10 # webhook.timeoutSeconds\nor\n  b > 5 # c\n")
	if want := `a{x="#not"} > 0.6 * 10 or b > 5`; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
}
