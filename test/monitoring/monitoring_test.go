package monitoring

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/rulefmt"
)

var update = flag.Bool("update", false, "rewrite "+NamesFile+" from the bundle's expressions")

// origins is every metric name the bundle may read, with what exposes it. A name the alerts or
// the dashboard read that is not here fails TestMetricNames, and so does a name here that nothing
// reads: this table is the list NamesFile is written from.
var origins = map[string]Origin{
	// The server's own metrics (pkg/controller/sidecarset/metric, pkg/controller/injectionsync,
	// pkg/apiserver/version.go).
	"sidecarset_build_info":                               Server,
	"sidecarset_certificate_expiration_timestamp_seconds": Server,
	"sidecarset_pods_not_injected":                        Server,
	"sidecarset_rollout_stalled":                          Server,
	"sidecarset_pods_waiting":                             Server,
	"sidecarset_pods_upgraded_total":                      Server,
	"sidecarset_pod_upgrade_duration_seconds_bucket":      Server,
	"sidecarset_injection_object_write_errors_total":      Server,
	"sidecarset_injection_webhook_selects_every_pod":      Server,
	// The generic API server's, served by this server too (selected by job).
	"apiserver_request_total":                   Server,
	"apiserver_request_duration_seconds_bucket": Server,
	// client-go's, registered by pkg/apiserver/metrics.go.
	"leader_election_master_status":               Server,
	"workqueue_depth":                             Server,
	"workqueue_adds_total":                        Server,
	"workqueue_retries_total":                     Server,
	"workqueue_longest_running_processor_seconds": Server,
	"workqueue_queue_duration_seconds_bucket":     Server,
	"workqueue_work_duration_seconds_bucket":      Server,
	// The server's etcd.
	"etcd_server_has_leader":                           Etcd,
	"etcd_server_leader_changes_seen_total":            Etcd,
	"etcd_server_quota_backend_bytes":                  Etcd,
	"etcd_mvcc_db_total_size_in_bytes":                 Etcd,
	"etcd_mvcc_db_total_size_in_use_in_bytes":          Etcd,
	"etcd_disk_wal_fsync_duration_seconds_bucket":      Etcd,
	"etcd_disk_backend_commit_duration_seconds_bucket": Etcd,
	// Outside this project.
	"aggregator_unavailable_apiservice": KubeAPIServer,
	// kube-apiserver's admission metrics (k8s.io/apiserver/pkg/admission/metrics and
	// .../plugin/policy/mutating/metrics), as testdata/kube-apiserver-admission.prom has them.
	"apiserver_admission_webhook_admission_duration_seconds_bucket":     KubeAPIServer,
	"apiserver_admission_webhook_request_total":                         KubeAPIServer,
	"apiserver_admission_webhook_rejection_count":                       KubeAPIServer,
	"apiserver_admission_webhook_fail_open_count":                       KubeAPIServer,
	"apiserver_admission_match_condition_evaluation_errors_total":       KubeAPIServer,
	"apiserver_mutating_admission_policy_check_total":                   KubeAPIServer,
	"apiserver_mutating_admission_policy_check_duration_seconds_bucket": KubeAPIServer,
	"kube_job_failed":                          KubeStateMetrics,
	"kube_job_status_start_time":               KubeStateMetrics,
	"kube_cronjob_status_last_successful_time": KubeStateMetrics,
	"kube_namespace_status_condition":          KubeStateMetrics,
}

func root(t *testing.T) string {
	t.Helper()
	r, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func alerts(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, err := LoadAlerts(filepath.Join(root(t), AlertsFile), NewParser())
	if err != nil {
		t.Fatalf("Prometheus refuses %s:\n%v", AlertsFile, err)
	}
	return groups
}

func dashboard(t *testing.T) *Dashboard {
	t.Helper()
	d, err := LoadDashboard(filepath.Join(root(t), DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestAlerts: Prometheus loads the rule file (every expression and template parsed); each alert
// has a unique name, a severity an operator routes on, a summary and a description, a row in
// README.md's alerts table linking to its runbook section, and a runbook_url whose anchor is a
// section of docs/runbook.md telling its meaning, impact, diagnosis (with commands) and fix, in
// that order.
func TestAlerts(t *testing.T) {
	groups := alerts(t)
	runbook, err := os.ReadFile(filepath.Join(root(t), RunbookFile))
	if err != nil {
		t.Fatal(err)
	}
	sections := RunbookSections(runbook)
	readme, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" {
				t.Errorf("group %s: a recording rule (%s); the file holds alerts only", g.Name, r.Record)
				continue
			}
			if seen[r.Alert] {
				t.Errorf("alert %s: defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, a := range []string{"summary", "description"} {
				if r.Annotations[a] == "" {
					t.Errorf("alert %s: no %s annotation", r.Alert, a)
				}
			}
			want := RunbookBaseURL + "#" + Anchor(r.Alert)
			if got := r.Annotations["runbook_url"]; got != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, got, want)
			}
			if link := "[" + r.Alert + "](" + RunbookFile + "#" + Anchor(r.Alert) + ")"; !bytes.Contains(readme, []byte(link)) {
				t.Errorf("alert %s: README.md's alerts table has no %s", r.Alert, link)
			}
			s, ok := sections[Anchor(r.Alert)]
			if !ok {
				t.Errorf("alert %s: %s has no section \"## %s\"", r.Alert, RunbookFile, r.Alert)
				continue
			}
			if err := checkSection(s); err != nil {
				t.Errorf("%s, section %s: %v", RunbookFile, s.Title, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert")
	}
}

// checkSection checks that a runbook section has its four parts in order and a command to run.
func checkSection(s Section) error {
	at := 0
	for _, part := range []string{"### Meaning", "### Impact", "### Diagnosis", "### Fix"} {
		i := strings.Index(s.Body[at:], part+"\n")
		if i < 0 {
			return fmt.Errorf("no %q after the parts before it", part)
		}
		at += i + len(part)
	}
	diagnosis := s.Body[strings.Index(s.Body, "### Diagnosis"):strings.Index(s.Body, "### Fix")]
	if !strings.Contains(diagnosis, "```sh\n") {
		return fmt.Errorf("the diagnosis has no commands (a ```sh block)")
	}
	return nil
}

// TestDashboard: every panel reads the dashboard's data source variable and has queries, panel
// ids are unique, and Prometheus' parser reads every query (panels and variables).
func TestDashboard(t *testing.T) {
	d := dashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both are needed for provisioning", d.UID, d.Title)
	}
	ids := map[int]bool{}
	panels := d.AllPanels()
	if len(panels) == 0 {
		t.Fatal("no panel")
	}
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %+v, want prometheus ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		for _, target := range p.Targets {
			if strings.TrimSpace(target.Expr) == "" {
				t.Errorf("panel %q (%s): empty query", p.Title, target.RefID)
			}
		}
	}
	queries, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	p := NewParser()
	for _, q := range queries {
		if _, err := p.ParseExpr(q.Expr); err != nil {
			t.Errorf("%s: %q: %v", q.Where, q.Expr, err)
		}
	}
}

// TestMetricNames: the metric names the alerts and the dashboard read are exactly those of
// origins, and NamesFile lists them with their origins (-update rewrites it).
func TestMetricNames(t *testing.T) {
	queries := AlertQueries(alerts(t))
	dq, err := dashboard(t).Queries()
	if err != nil {
		t.Fatal(err)
	}
	queries = append(queries, dq...)
	p := NewParser()
	used := map[string][]string{} // name -> where
	for _, q := range queries {
		names, err := MetricNames(p, q.Expr)
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
			continue
		}
		for _, n := range names {
			used[n] = append(used[n], q.Where)
		}
	}
	var unknown, unused []string
	for n, where := range used {
		if _, ok := origins[n]; !ok {
			unknown = append(unknown, fmt.Sprintf("%s (read by %s)", n, strings.Join(where, ", ")))
		}
	}
	for n := range origins {
		if used[n] == nil {
			unused = append(unused, n)
		}
	}
	sort.Strings(unknown)
	sort.Strings(unused)
	if len(unknown) > 0 {
		t.Errorf("metrics read without an origin in this test's table (add each, with what exposes it):\n%s", strings.Join(unknown, "\n"))
	}
	if len(unused) > 0 {
		t.Errorf("metrics in this test's table that nothing reads (remove them): %s", strings.Join(unused, ", "))
	}

	path := filepath.Join(root(t), NamesFile)
	want := NamesFileContent(origins)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (cd test/monitoring && go test . -update writes it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is out of date (cd test/monitoring && go test . -update) (-want +got):\n%s", NamesFile, cmp.Diff(string(want), string(got)))
	}
}

// TestMetricNamesOfExpressions checks the extraction itself.
func TestMetricNamesOfExpressions(t *testing.T) {
	p := NewParser()
	for _, tc := range []struct {
		expr    string
		want    []string
		wantErr string
	}{
		{expr: `up`, want: []string{"up"}},
		{expr: `a{job="x"} / on (pod) b offset 5m > 0.8 and c`, want: []string{"a", "b", "c"}},
		{expr: `histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))`, want: []string{"h_bucket"}},
		{expr: `{__name__="named", job="x"} + count(named)`, want: []string{"named"}},
		{expr: `time() - max(t{job="x"})`, want: []string{"t"}},
		{expr: `sum(rate(x[$__rate_interval]))`, wantErr: "Grafana variable"},
		{expr: `{job="x"}`, wantErr: "without a metric name"},
		{expr: `{__name__=~"a|b"}`, wantErr: "without a metric name"},
		{expr: `sum(rate(x[5m])`, wantErr: "unclosed"},
	} {
		got, err := MetricNames(p, tc.expr)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one saying %q", tc.expr, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.expr, diff)
		}
	}
}

// TestRunbookAnchors checks the anchors GitHub makes of the runbook's headings.
func TestRunbookAnchors(t *testing.T) {
	md := []byte("# Runbook\n\nintro\n\n## SidecarSetEtcdNoLeader\n\n### Meaning\nx\n```sh\n## not a heading\n```\n## Scraping /metrics (HTTPS)\ny\n")
	got := map[string]string{}
	for anchor, s := range RunbookSections(md) {
		got[anchor] = s.Title
	}
	want := map[string]string{"sidecarsetetcdnoleader": "SidecarSetEtcdNoLeader", "scraping-metrics-https": "Scraping /metrics (HTTPS)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
}
