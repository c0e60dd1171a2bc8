package monitoring

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/promqltest"
)

// TestAlertsFire evaluates each alert's expression, as the rule file has it, with Prometheus'
// engine on series shaped as the server, its etcd, kube-apiserver and kube-state-metrics expose
// them: it selects what it should (one leader's gauge among replicas, the server's APIServices
// only, a recent failed backup Job but not an old one, this server's webhooks and policies but no
// one else's, each class of webhook against its own timeout, ...) and nothing else. The
// kube-apiserver series have the labels of testdata/kube-apiserver-admission.prom, scraped from a
// real one (TestAlertsOnKubeAPIServerScrape evaluates the alerts on those series themselves). The `for` of each
// alert is not evaluated. Each case is a promqltest script whose `eval` lines use ALERT(Name) for
// the alert's expression.
func TestAlertsFire(t *testing.T) {
	exprs := map[string]string{}
	for _, g := range alerts(t).Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = OneLine(r.Expr)
		}
	}
	tested := map[string]bool{}
	for _, tc := range []struct {
		alert, script string
	}{
		{"SidecarSetPodsNotInjected", `
load 1m
  sidecarset_pods_not_injected{job="sidecarset-apiserver", namespace="ns", pod="server-a", sidecarset="logging"} 3 3 3
  sidecarset_pods_not_injected{job="sidecarset-apiserver", namespace="ns", pod="server-a", sidecarset="proxy"} 0 0 0
  sidecarset_pods_not_injected{job="other", namespace="ns", pod="x", sidecarset="logging"} 5 5 5

eval instant at 2m ALERT
  {namespace="ns", sidecarset="logging"} 3
`},
		{"SidecarSetRolloutStalled", `
load 1m
  sidecarset_rollout_stalled{job="sidecarset-apiserver", namespace="ns", pod="server-a", sidecarset="logging"} 0 1 1
  sidecarset_rollout_stalled{job="sidecarset-apiserver", namespace="ns", pod="server-a", sidecarset="proxy"} 0 0 0

eval instant at 2m ALERT
  {namespace="ns", sidecarset="logging"} 1

eval instant at 0m ALERT
`},
		{"SidecarSetInjectionObjectWriteErrors", `
load 1m
  sidecarset_injection_object_write_errors_total{job="sidecarset-apiserver", namespace="ns", pod="server-a", kind="MutatingAdmissionPolicy"} 0+1x20
  sidecarset_injection_object_write_errors_total{job="sidecarset-apiserver", namespace="ns", pod="server-a", kind="MutatingAdmissionPolicyBinding"} 0+0x20

eval instant at 20m ALERT
  {namespace="ns", kind="MutatingAdmissionPolicy"} 0.016666666666666666
`},
		{"SidecarSetWebhookReceivesEveryPod", `
load 1m
  sidecarset_injection_webhook_selects_every_pod{job="sidecarset-apiserver", namespace="ns", pod="server-a"} 1 1
  sidecarset_injection_webhook_selects_every_pod{job="sidecarset-apiserver", namespace="ns", pod="server-b"} 0 0
  sidecarset_injection_webhook_selects_every_pod{job="sidecarset-apiserver", namespace="calm", pod="server-c"} 0 0

eval instant at 1m ALERT
  {namespace="ns"} 1
`},
		{"SidecarSetControllerWithoutLeader", `
load 1m
  leader_election_master_status{job="sidecarset-apiserver", namespace="led", pod="server-a", name="sidecarset-controller"} 1 1
  leader_election_master_status{job="sidecarset-apiserver", namespace="led", pod="server-b", name="sidecarset-controller"} 0 0
  leader_election_master_status{job="sidecarset-apiserver", namespace="adrift", pod="server-c", name="sidecarset-controller"} 0 0
  leader_election_master_status{job="sidecarset-apiserver", namespace="adrift", pod="server-d", name="sidecarset-controller"} 0 0

eval instant at 1m ALERT
  {namespace="adrift"} 0
`},
		{"SidecarSetAPIServiceUnavailable", `
load 1m
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1alpha1.apps.kruise.io"} 1 1
  aggregator_unavailable_apiservice{job="apiserver", instance="b", name="v1alpha1.apps.kruise.io"} 0 0
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1beta1.apps.kruise.io"} 0 0
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1.admission.kruise.io"} 1 1
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1.metrics.k8s.io"} 1 1
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1alpha1xapps.kruise.io"} 1 1

eval instant at 1m ALERT
  {name="v1alpha1.apps.kruise.io"} 1
  {name="v1.admission.kruise.io"} 1
`},
		// Namespace "stuck" is held up by discovery while v1.admission.kruise.io is unavailable;
		// "waiting" only on its content, "done" no longer. Then the same namespace while only
		// another aggregated API is unavailable: not this server's doing.
		{"SidecarSetNamespaceDeletionStalled", `
load 1m
  kube_namespace_status_condition{job="kube-state-metrics", namespace="stuck", condition="NamespaceDeletionDiscoveryFailure", status="true"} 1 1
  kube_namespace_status_condition{job="kube-state-metrics", namespace="stuck", condition="NamespaceDeletionDiscoveryFailure", status="false"} 0 0
  kube_namespace_status_condition{job="kube-state-metrics", namespace="waiting", condition="NamespaceDeletionDiscoveryFailure", status="true"} 0 0
  kube_namespace_status_condition{job="kube-state-metrics", namespace="waiting", condition="NamespaceContentRemaining", status="true"} 1 1
  kube_namespace_status_condition{job="kube-state-metrics", namespace="done", condition="NamespaceDeletionDiscoveryFailure", status="true"} 0 0
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1alpha1.apps.kruise.io"} 0 0
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1.admission.kruise.io"} 1 1
  aggregator_unavailable_apiservice{job="apiserver", instance="b", name="v1.admission.kruise.io"} 0 0

eval instant at 1m ALERT
  {namespace="stuck"} 1

clear

load 1m
  kube_namespace_status_condition{job="kube-state-metrics", namespace="stuck", condition="NamespaceDeletionDiscoveryFailure", status="true"} 1 1
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1alpha1.apps.kruise.io"} 0 0
  aggregator_unavailable_apiservice{job="apiserver", instance="a", name="v1beta1.metrics.k8s.io"} 1 1

eval instant at 1m ALERT
`},
		{"SidecarSetEtcdNoLeader", `
load 1m
  etcd_server_has_leader{job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-0"} 0 0
  etcd_server_has_leader{job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-1"} 1 1
  etcd_server_has_leader{job="kube-etcd", namespace="kube-system", pod="etcd-node"} 0 0

eval instant at 1m ALERT
  etcd_server_has_leader{job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-0"} 0
`},
		{"SidecarSetEtcdDatabaseNearQuota", `
load 1m
  etcd_mvcc_db_total_size_in_bytes{job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-0"} 3500000000 3500000000
  etcd_mvcc_db_total_size_in_bytes{job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-1"} 1000000000 1000000000
  etcd_server_quota_backend_bytes{job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-0"} 4294967296 4294967296
  etcd_server_quota_backend_bytes{job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-1"} 4294967296 4294967296

eval instant at 1m ALERT
  {job="sidecarset-etcd", namespace="ns", pod="sidecarset-etcd-0"} 0.8149072527885437
`},
		// Two days of hourly samples: one Job failed at the start (over a day ago), one an hour
		// before the evaluation, one succeeded.
		{"SidecarSetEtcdBackupFailed", `
load 1h
  kube_job_failed{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-00-29000000", condition="true"} 1x48
  kube_job_failed{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-00-29000000", condition="false"} 0x48
  kube_job_status_start_time{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-00-29000000"} 0x48
  kube_job_failed{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-18-29002000", condition="true"} 1x48
  kube_job_failed{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-18-29002000", condition="false"} 0x48
  kube_job_status_start_time{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-18-29002000"} 169200x48
  kube_job_failed{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-12-29001600", condition="true"} 0x48
  kube_job_status_start_time{job="kube-state-metrics", namespace="ns", job_name="sidecarset-etcd-backup-12-29001600"} 169200x48
  kube_job_failed{job="kube-state-metrics", namespace="ns", job_name="other-29002000", condition="true"} 1x48
  kube_job_status_start_time{job="kube-state-metrics", namespace="ns", job_name="other-29002000"} 169200x48

eval instant at 48h ALERT
  {namespace="ns", job_name="sidecarset-etcd-backup-18-29002000"} 1
`},
		// The last success in "stale" was at 0 (27 hours before the evaluation); in "fresh" one
		// CronJob succeeded 3 hours before it.
		{"SidecarSetEtcdBackupTooOld", `
load 1h
  kube_cronjob_status_last_successful_time{job="kube-state-metrics", namespace="stale", cronjob="sidecarset-etcd-backup-00"} 0x27
  kube_cronjob_status_last_successful_time{job="kube-state-metrics", namespace="stale", cronjob="sidecarset-etcd-backup-06"} 0x27
  kube_cronjob_status_last_successful_time{job="kube-state-metrics", namespace="fresh", cronjob="sidecarset-etcd-backup-00"} 0x27
  kube_cronjob_status_last_successful_time{job="kube-state-metrics", namespace="fresh", cronjob="sidecarset-etcd-backup-06"} 86400x27

eval instant at 27h ALERT
  {namespace="stale"} 97200
`},
		// p99 of each webhook: 79 of 80 calls within 2.5 s and 1 in (2.5 s, 10 s] make 4 s, above
		// 60% of kube-system's 5 s timeout but not of the application namespaces' 10 s; every call
		// in (2.5 s, 10 s] makes 9.925 s.
		{"SidecarSetWebhookLatencyNearTimeout", `
load 1m
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="intake.sidecarinjection.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="2.5"} 0+79x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="intake.sidecarinjection.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="10"} 0+80x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="intake.sidecarinjection.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="+Inf"} 0+80x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="sidecarinjection-system.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="2.5"} 0+79x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="sidecarinjection-system.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="10"} 0+80x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="sidecarinjection-system.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="+Inf"} 0+80x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="1.sidecarinjection.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="2.5"} 0+0x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="1.sidecarinjection.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="10"} 0+80x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="1.sidecarinjection.admission.kruise.io", operation="CREATE", rejected="false", type="admit", le="+Inf"} 0+80x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="slow.example.com", operation="CREATE", rejected="false", type="admit", le="2.5"} 0+0x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="slow.example.com", operation="CREATE", rejected="false", type="admit", le="10"} 0+80x20
  apiserver_admission_webhook_admission_duration_seconds_bucket{name="slow.example.com", operation="CREATE", rejected="false", type="admit", le="+Inf"} 0+80x20

eval instant at 20m ALERT
  {name="1.sidecarinjection.admission.kruise.io"} 9.925
  {name="sidecarinjection-system.admission.kruise.io"} 4
`},
		{"SidecarSetWebhookRefusingPods", `
load 1m
  apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error", name="sidecarinjection.admission.kruise.io", operation="CREATE", rejection_code="503", type="admit"} 0+1x20
  apiserver_admission_webhook_rejection_count{error_type="no_error", name="sidecarinjection.admission.kruise.io", operation="CREATE", rejection_code="422", type="admit"} 0+5x20
  apiserver_admission_webhook_rejection_count{error_type="apiserver_internal_error", name="2.sidecarinjection.admission.kruise.io", operation="CREATE", rejection_code="0", type="admit"} 3x20
  apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error", name="other.example.com", operation="CREATE", rejection_code="500", type="admit"} 0+1x20

eval instant at 20m ALERT
  {name="sidecarinjection.admission.kruise.io"} 0.016666666666666666
`},
		{"SidecarSetWebhookDenyingPods", `
load 1m
  apiserver_admission_webhook_rejection_count{error_type="no_error", name="sidecarinjection.admission.kruise.io", operation="CREATE", rejection_code="422", type="admit"} 0+2x20
  apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error", name="sidecarinjection.admission.kruise.io", operation="CREATE", rejection_code="503", type="admit"} 0+1x20
  apiserver_admission_webhook_rejection_count{error_type="no_error", name="other.example.com", operation="CREATE", rejection_code="403", type="admit"} 0+1x20

eval instant at 20m ALERT
  {name="sidecarinjection.admission.kruise.io", rejection_code="422"} 0.03333333333333333
`},
		{"SidecarSetWebhookFailingOpen", `
load 1m
  apiserver_admission_webhook_fail_open_count{name="sidecarinjection-system.admission.kruise.io", type="admit"} 0+1x20
  apiserver_admission_webhook_fail_open_count{name="intake.sidecarinjection.admission.kruise.io", type="admit"} 2x20
  apiserver_admission_webhook_fail_open_count{name="other.example.com", type="admit"} 0+1x20

eval instant at 20m ALERT
  {name="sidecarinjection-system.admission.kruise.io"} 0.016666666666666666
`},
		{"SidecarSetPolicyRefusingPods", `
load 1m
  apiserver_mutating_admission_policy_check_total{error_type="no_error", policy="sidecarsets-app-v0", policy_binding="sidecarsets-app-v0"} 0+10x20
  apiserver_mutating_admission_policy_check_total{error_type="out_of_budget", policy="sidecarsets-app-v1", policy_binding="sidecarsets-app-v1"} 0+1x20
  apiserver_mutating_admission_policy_check_total{error_type="invalid_error", policy="someone-else", policy_binding="someone-else"} 0+1x20

eval instant at 20m ALERT
  {policy="sidecarsets-app-v1"} 0.016666666666666666
`},
		// p99 of 100 mutations a minute: 90 within 0.1 s and 10 in (0.1 s, 1 s] make 0.91 s; 99
		// within 1 ms make 1 ms.
		{"SidecarSetPolicySlow", `
load 1m
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="sidecarsets-app-v0", policy_binding="sidecarsets-app-v0", le="0.1"} 0+90x20
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="sidecarsets-app-v0", policy_binding="sidecarsets-app-v0", le="1"} 0+100x20
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="sidecarsets-app-v0", policy_binding="sidecarsets-app-v0", le="+Inf"} 0+100x20
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="sidecarsets-app-v1", policy_binding="sidecarsets-app-v1", le="0.001"} 0+99x20
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="sidecarsets-app-v1", policy_binding="sidecarsets-app-v1", le="0.01"} 0+100x20
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="sidecarsets-app-v1", policy_binding="sidecarsets-app-v1", le="+Inf"} 0+100x20
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="someone-else", policy_binding="someone-else", le="0.1"} 0+0x20
  apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error", policy="someone-else", policy_binding="someone-else", le="+Inf"} 0+100x20

eval instant at 20m ALERT
  {policy="sidecarsets-app-v0"} 0.91
`},
		{"SidecarSetMatchConditionErrors", `
load 1m
  apiserver_admission_match_condition_evaluation_errors_total{kind="policy", name="sidecarsets-app-v0", operation="CREATE", type="validate"} 0+1x20
  apiserver_admission_match_condition_evaluation_errors_total{kind="webhook", name="1.sidecarinjection.admission.kruise.io", operation="CREATE", type="admit"} 0+2x20
  apiserver_admission_match_condition_evaluation_errors_total{kind="policy", name="sidecarset-apiserver-pod-guard", operation="UPDATE", type="validate"} 0+1x20
  apiserver_admission_match_condition_evaluation_errors_total{kind="webhook", name="other.example.com", operation="CREATE", type="admit"} 0+1x20

eval instant at 20m ALERT
  {kind="policy", name="sidecarsets-app-v0"} 0.016666666666666666
  {kind="webhook", name="1.sidecarinjection.admission.kruise.io"} 0.03333333333333333
`},
		// Day 0: the serving certificates of two replicas expire on day 40 and day 20 (one replica
		// has not taken the renewal), etcd's peer certificate on day 300; another job's on day 1.
		{"SidecarSetCertificateExpiresSoon", `
load 1d
  sidecarset_certificate_expiration_timestamp_seconds{job="sidecarset-apiserver", namespace="ns", pod="server-a", certificate="serving"} 3456000x2
  sidecarset_certificate_expiration_timestamp_seconds{job="sidecarset-apiserver", namespace="ns", pod="server-b", certificate="serving"} 1728000x2
  sidecarset_certificate_expiration_timestamp_seconds{job="sidecarset-apiserver", namespace="ns", pod="server-a", certificate="etcd-peer"} 25920000x2
  sidecarset_certificate_expiration_timestamp_seconds{job="other", namespace="ns", pod="x", certificate="serving"} 86400x2

eval instant at 0 ALERT
  {namespace="ns", certificate="serving"} 1728000
`},
		// On day 1, the etcd client certificate expires on day 5, the serving one on day 20.
		{"SidecarSetCertificateExpiresVerySoon", `
load 1d
  sidecarset_certificate_expiration_timestamp_seconds{job="sidecarset-apiserver", namespace="ns", pod="server-a", certificate="etcd-client"} 432000x2
  sidecarset_certificate_expiration_timestamp_seconds{job="sidecarset-apiserver", namespace="ns", pod="server-a", certificate="serving"} 1728000x2

eval instant at 1d ALERT
  {namespace="ns", certificate="etcd-client"} 345600
`},
	} {
		t.Run(tc.alert, func(t *testing.T) {
			expr, ok := exprs[tc.alert]
			if !ok {
				t.Fatalf("no alert %s in %s", tc.alert, AlertsFile)
			}
			tested[tc.alert] = true
			script := strings.ReplaceAll(tc.script, " ALERT\n", " "+expr+"\n")
			promqltest.RunTest(t, script, promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery))
		})
	}
	for name := range exprs {
		if !tested[name] {
			t.Errorf("alert %s: no case here", name)
		}
	}
}
