# The two commands of the README: `make run` (local cluster + the manual's example) and `make test`.
GO ?= go

.PHONY: run test unit chart verify lint verify-fresh e2e e2e-node e2e-moves e2e-policy fuzz chaos bench bench-planner bench-e2e bench-tenants bench-rollout bench-memory bench-heap bench-curves bench-plot build codegen down image release

# The version stamped into the server, the plugin and the image (pkg/version): git describe, or
# VERSION=v1.2.3 make build.
VERSION_LDFLAGS = $(shell VERSION=$(VERSION) hack/version.sh)

build:
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o _output/bin/sidecarset-apiserver ./cmd/apiserver
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o _output/bin/kubectl-sidecarset ./cmd/kubectl-sidecarset

# The server's OCI image for one platform, without a container daemon: the static binary and an
# /etc/passwd entry for uid 65532 in one layer, with the OCI labels of the version, written by
# hack/release (go-containerregistry) as an image layout (_output/image/oci) and its tar
# (_output/image/sidecarset-apiserver.tar). Push it with the operator's tool, e.g.
#   skopeo copy oci-archive:_output/image/sidecarset-apiserver.tar docker://REGISTRY/sidecarset-apiserver:TAG
#   crane push _output/image/oci REGISTRY/sidecarset-apiserver:TAG
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_TAG ?= latest

image:
	GO=$(GO) VERSION=$(VERSION) IMAGE_ARCH=$(IMAGE_ARCH) IMAGE_TAG=$(IMAGE_TAG) hack/release/release.sh image

# Release artifacts in _output/release (docs/release.md): the server's image index for linux/amd64
# and linux/arm64 (oci/ and sidecarset-apiserver-oci.tar), the packaged chart, the plugin for linux
# and darwin on amd64 and arm64 (.tar.gz with LICENSE) and its krew manifest sidecarset.yaml, and
# SHA256SUMS; then hack/release checks what it wrote. VERSION=v1.2.3 names the release; RELEASE_URL
# is where the krew manifest downloads the plugin's archives from.
release:
	GO=$(GO) VERSION=$(VERSION) RELEASE_URL=$(RELEASE_URL) hack/release/release.sh

run:
	hack/local-up.sh run

down:
	hack/local-up.sh down

# Everything CI runs: generated code in sync, lint (gofmt, vet, staticcheck), unit and integration
# tests, then the end-to-end tests against a local kube-apiserver + kwok cluster built by hack/.
test: verify unit e2e

verify: lint
	hack/verify-codegen.sh
	$(GO) test -count=1 -run TestArchitectureDiagram ./test/docs/
	GO=$(GO) hack/render-deploy.sh --verify

# gofmt, go vet and staticcheck (pinned in hack/verify-lint.sh, fetched from the Go module proxy).
lint:
	GO=$(GO) hack/verify-lint.sh

# The code generation check against an empty, temporary module cache (what a fresh machine has).
verify-fresh:
	hack/verify-codegen-fresh.sh

# The main module's tests, then the differential test of the SidecarSet validation against
# kube-apiserver's pod validation (its own module, test/podvalidation, which requires
# k8s.io/kubernetes; about 20 s), and the check of the chart's alerts and dashboard with
# Prometheus' parser and engine (its own module, test/monitoring, which requires
# github.com/prometheus/prometheus), and the server's off-cluster snapshot copies against a local
# S3-compatible store (its own module, test/objectstore, which requires github.com/rclone/gofakes3).
# test/chart needs helm and kubectl: built first (once, into
# _output/tools), so that no test waits for them.
unit:
	GO=$(GO) hack/install-helm.sh >/dev/null
	hack/install-tools.sh >/dev/null
	$(GO) test -count=1 ./...
	cd test/podvalidation && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd test/monitoring && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd test/objectstore && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd hack/release && $(GO) vet ./... && $(GO) test -count=1 ./...

# The Helm chart charts/sidecarset-apiserver: helm lint --strict with its values.schema.json (here
# with cert-manager, which needs no certificate files; TestHelmLint lints every source), the check
# that artifacts/deploy is what the chart renders (hack/render-deploy.sh), and test/chart, which
# renders the chart for each combination of values and checks where each value lands. helm is
# built by hack/install-helm.sh the first time.
chart:
	GO=$(GO) hack/install-helm.sh >/dev/null
	$$(hack/install-helm.sh | tail -n 1) lint --strict charts/sidecarset-apiserver --set certificates.source=cert-manager
	GO=$(GO) hack/render-deploy.sh --verify
	$(GO) test -count=1 -v ./test/chart/

# Seven local clusters at once (hack/e2e.sh): the conformance catalogue and the tests that restart
# or reconfigure something spread over six of them, every other test on the main one, whose tests
# run in a serial phase (restarts, reconfiguration, uninstalls) and then a parallel one.
# REAL_NODE=1: the main cluster also gets the real node (containerd and a kubelet; hack/local-up.sh
# node-up, root only), on which the TestRealNode tests run. Logs and per-test times: _output/e2e/.
e2e:
	REAL_NODE=1 hack/e2e.sh

# Every test on the real node (in-place upgrades of containers and native sidecars, transferEnv and
# shareVolumePolicy, an unpullable image and its rollback, the maxUnavailable budget, and
# artifacts/deploy itself running there: TestRealNodeDeployment).
e2e-node:
	E2E=1 REAL_NODE=1 E2E_REAL_NODE_ALL=1 $(GO) test -count=1 -timeout 30m -run 'TestRealNode' -v ./test/e2e/

# The policy/webhook differential on 500 generated cases (about 1,250 SidecarSets; make test runs
# 60): kube-apiserver compiles group policies that large slowly on 2 cores.
e2e-policy:
	E2E=1 E2E_POLICY_CASES=500 $(GO) test -count=1 -timeout 30m -run 'TestPolicyDifferential' -v ./test/e2e/

# Pods created continuously while SidecarSets move between the webhook and policies (mode switches,
# restarts, regrouping, a new image): none may be created without its sidecars.
e2e-moves:
	E2E=1 $(GO) test -count=5 -timeout 30m -run 'TestNoGapWhenPathsChange' -v ./test/e2e/

# Every fuzz target for FUZZTIME each (default 30s), with the executions per target and in total.
# Their seed corpora already run as ordinary tests in `make unit`.
FUZZTIME ?= 30s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/injection/ ./pkg/admission/plugin/crossvalidation/ ./pkg/apis/apps/validation/ ./pkg/controller/sidecarset/podcache/ ./pkg/controller/sidecarset/rollout/ ./pkg/sidecar/

# The injection-path planner at 1,000 and 10,000 stored SidecarSets of each shape: a plan after one
# more create (what each SidecarSet write costs the server) and a plan from nothing (what a new
# leader does first).
bench-planner:
	$(GO) test -run '^$$' -bench 'PlanAfterCreate|PlanFromNothing' -benchtime 5x -benchmem ./pkg/admission/policy/

# For each selector shape (the manual's one key, a key per SidecarSet, mixed; E2E_BENCH_SHAPES narrows
# them) and each mode: kubectl apply of 1,000 SidecarSets, SidecarSet create latency and
# kube-apiserver CPU per create with them stored, and pod-create latency and throughput through
# kube-apiserver against creates nothing injects (2,000 per case).
bench-e2e:
	E2E=1 E2E_BENCH=2000 $(GO) test -count=1 -timeout 60m -run 'TestInjectionModes' -v ./test/e2e/

# The server with 5,000 NamespacedSidecarSets over 50 namespaces beside 1,000 SidecarSets.
bench-tenants:
	E2E=1 E2E_TENANT_BENCH=5000 $(GO) test -count=1 -timeout 60m -run 'TestTenantScale' -v ./test/e2e/

codegen:
	hack/update-codegen.sh

# Rollout of 1,000 kwok pods at maxUnavailable 10%: wall time against batches x restart delay.
bench-rollout:
	E2E=1 E2E_SCALE=1 E2E_SCALE_PODS=1000 $(GO) test -count=1 -timeout 60m -run TestRolloutWallTime -v ./test/e2e/

# Fault tolerance: three rollouts of a new sidecar image over 1,000 kwok pods at maxUnavailable 10%,
# with kube-apiserver restarted, the server's etcd stopped, and the leading replica killed at 5
# random moments (make test runs the same test with 100 pods and 2 kills).
chaos:
	E2E=1 E2E_CHAOS_PODS=1000 E2E_CHAOS_KILLS=5 $(GO) test -count=1 -timeout 60m -run TestChaosRollout -v ./test/e2e/

# Scale curves: 100, 1,000 and 10,000 SidecarSets (E2E_CURVE_SIZES) of each shape (E2E_BENCH_SHAPES), cluster-wide
# and namespaced (E2E_CURVE_KINDS), in both modes, then 1,000 and 10,000 pods (E2E_CURVE_PODS); records in
# docs/bench/curves.jsonl (committed: every point measured stays), then the table and plot in docs/bench/
# (hours on 2 cores with the defaults).
bench-curves:
	E2E=1 E2E_CURVES=1 $(GO) test -count=1 -timeout 600m -run TestScaleCurves -v ./test/e2e/
	$(MAKE) bench-plot

bench-plot:
	mkdir -p docs/bench
	cd hack/benchplot && $(GO) run . -in ../../docs/bench/curves.jsonl -md ../../docs/bench/curves.md -png ../../docs/bench/curves.png

# The heap each stored SidecarSet costs a server in process (BENCH_SIDECARSETS, 1,000), with the
# defaults and with the watch cache on for the server's resources, for comparison.
bench-heap:
	$(GO) test -run '^$$' -bench ServerHeapPerSidecarSet -benchtime 1x ./test/integration/

# Server memory with 10,000 pods in its cache, against the same server idle.
bench-memory:
	E2E=1 E2E_SCALE=1 E2E_SCALE_PODS=10000 $(GO) test -count=1 -timeout 60m -run TestServerMemoryPerPod -v ./test/e2e/
