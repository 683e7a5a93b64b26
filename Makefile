# Shutter. `make run` serves on the embedded default; `make test` installs and
# starts what the tests need, runs them all, and stops what it started.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/shutterhq/shutter/internal/version.Version=$(VERSION)
# Tool builds live outside the clone, keyed by version, so a fresh clone
# reuses them.
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/shutter

CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(CACHE_DIR)/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen
K8S_VERSION := 1.37.1
ETCD_VERSION := v3.7.3
KUBEBUILDER_ASSETS ?= $(CACHE_DIR)/k8s-$(K8S_VERSION)
export KUBEBUILDER_ASSETS
# The staging modules of k8s.io/kubernetes, replaced by their published
# versions so that kube-apiserver builds from the module proxy.
K8S_STAGING := api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
	cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api cri-client \
	cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator \
	kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission \
	sample-apiserver streaming
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(CACHE_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
BENCHSTAT := $(CACHE_DIR)/benchstat-$(BENCHSTAT_VERSION)/benchstat
# The saved render benchmark this machine compares against (not committed:
# figures belong to the machine that made them).
BENCH_BASELINE ?= $(CACHE_DIR)/bench/render-baseline.txt
HELM_VERSION := v3.22.0
HELM := $(CACHE_DIR)/helm-$(HELM_VERSION)/helm
export HELM
VERSITYGW_VERSION := v1.8.0
VERSITYGW := $(CACHE_DIR)/versitygw-$(VERSITYGW_VERSION)/versitygw
export VERSITYGW

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# Fonts that real pages need: CJK, Arabic, Indic, Thai (Noto) and colour
# emoji; without them those scripts render as empty boxes.
FONT_PACKAGES := fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji
FONT_FILES := /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf \
	/usr/share/fonts/truetype/noto/NotoSansArabic-Regular.ttf

# The maintained filter lists (EasyList, EasyPrivacy) as Debian ships them,
# and DuckDuckGo's consent engine from the npm registry at a pinned version.
EASYLIST_FILE := /usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt
AUTOCONSENT_VERSION := 16.23.0
AUTOCONSENT_SHA256 := b61907d0cae6f1f26679533c9951fe56573ca8038e12addfee5cb3f58de5fccc
AUTOCONSENT_DIR := $(CACHE_DIR)/autoconsent-$(AUTOCONSENT_VERSION)

.PHONY: deps
deps: deps-browser deps-lists $(AUTOCONSENT_DIR)/package/dist/autoconsent.playwright.js ## Install Chromium, the Noto fonts, EasyList/EasyPrivacy and the consent engine when missing.

.PHONY: deps-lists
deps-lists:
	@[ -e $(EASYLIST_FILE) ] || { $(call APT_INSTALL,webext-ublock-origin-chromium); }

# The registry's tarball, checked against its pinned digest, unpacked into
# the tool cache (curl, else npm pack).
$(AUTOCONSENT_DIR)/package/dist/autoconsent.playwright.js:
	@echo ">> fetching @duckduckgo/autoconsent $(AUTOCONSENT_VERSION) into $(AUTOCONSENT_DIR)"
	@mkdir -p $(AUTOCONSENT_DIR)
	@cd $(AUTOCONSENT_DIR) && rm -f autoconsent.tgz && \
	if command -v curl >/dev/null 2>&1; then \
		curl -fsSL -o autoconsent.tgz https://registry.npmjs.org/@duckduckgo/autoconsent/-/autoconsent-$(AUTOCONSENT_VERSION).tgz; \
	else npm pack --silent @duckduckgo/autoconsent@$(AUTOCONSENT_VERSION) >/dev/null && mv duckduckgo-autoconsent-$(AUTOCONSENT_VERSION).tgz autoconsent.tgz; fi && \
	echo "$(AUTOCONSENT_SHA256)  autoconsent.tgz" | sha256sum -c --quiet - && \
	tar xzf autoconsent.tgz package/dist/autoconsent.playwright.js package/rules/compact-rules.json package/rules/rules.json package/LICENSE package/package.json && \
	rm autoconsent.tgz

.PHONY: deps-browser
deps-browser:
	@found=; if [ -n "$${CHROME_PATH:-}" ] && [ -x "$${CHROME_PATH}" ]; then found=1; fi; \
	for p in /usr/lib/chromium/chromium-headless-shell chromium-headless-shell chromium google-chrome; do \
		if command -v $$p >/dev/null 2>&1; then found=1; fi; \
	done; \
	if [ -z "$$found" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo ">> installing chromium-headless-shell"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium-headless-shell fonts-dejavu-core >/dev/null; \
		else \
			echo "No Chromium found. Install one of:"; \
			echo "  Debian/Ubuntu (as root): apt-get install -y --no-install-recommends chromium-headless-shell"; \
			echo "  or set CHROME_PATH to a Chromium/Chrome binary, or BROWSER_URLS to running headless browsers."; \
			exit 1; \
		fi; \
	fi
	@for f in $(FONT_FILES); do \
		if [ ! -e $$f ]; then \
			if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
				echo ">> installing $(FONT_PACKAGES)"; \
				(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(FONT_PACKAGES) >/dev/null; \
			else echo "Without $(FONT_PACKAGES) CJK, Arabic and emoji render as boxes: apt-get install $(FONT_PACKAGES) (as root)"; fi; \
			break; \
		fi; \
	done

# apt installs Debian packages, as root, only when something is missing.
APT_INSTALL = if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo ">> installing $(1)"; \
		(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(1) >/dev/null; \
	else echo "Missing $(1): install with apt-get install $(1) (as root)"; exit 1; fi

.PHONY: test-deps
test-deps: deps $(VERSITYGW) $(HELM) envtest ## Install what the tests need: Chromium, PostgreSQL 15, Redis, tini, poppler-utils, an S3 server, Helm, kube-apiserver + etcd.
	@command -v tini >/dev/null 2>&1 || { $(call APT_INSTALL,tini); }
	@command -v pdftotext >/dev/null 2>&1 || { $(call APT_INSTALL,poppler-utils); }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(call APT_INSTALL,postgresql-15); }
	@command -v redis-server >/dev/null 2>&1 || { $(call APT_INSTALL,redis-server); }

# The S3-compatible server of the tests: Versity's gateway, built from the Go
# module proxy once per version into the tool cache (~1.5 min cold).
$(VERSITYGW):
	@echo ">> building versitygw $(VERSITYGW_VERSION) into $(@D)"
	GOBIN=$(@D) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

.PHONY: envtest
envtest: $(KUBEBUILDER_ASSETS)/kube-apiserver $(KUBEBUILDER_ASSETS)/etcd ## Build kube-apiserver and etcd for envtest (cached).

# kube-apiserver cannot be go-installed (its module has replace directives):
# a throwaway module repeats them. ~10 min cold on 2 cores, seconds warm.
$(KUBEBUILDER_ASSETS)/kube-apiserver:
	@echo ">> building kube-apiserver v$(K8S_VERSION) into $(@D) (about 10 minutes the first time)"
	@mkdir -p $(@D) $(CACHE_DIR)/build/kube-apiserver-$(K8S_VERSION)
	cd $(CACHE_DIR)/build/kube-apiserver-$(K8S_VERSION) && \
	printf 'module shutter.local/tools/kubeapiserver\n\ngo 1.26\n\nrequire k8s.io/kubernetes v$(K8S_VERSION)\n' > go.mod && \
	for m in $(K8S_STAGING); do echo "replace k8s.io/$$m => k8s.io/$$m v0.$(patsubst 1.%,%,$(K8S_VERSION))" >> go.mod; done && \
	GOFLAGS=-mod=mod $(GO) get k8s.io/kubernetes/cmd/kube-apiserver@v$(K8S_VERSION) && \
	CGO_ENABLED=0 GOFLAGS=-mod=mod $(GO) build -trimpath -o $@.tmp \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION)))" \
		k8s.io/kubernetes/cmd/kube-apiserver && mv $@.tmp $@

$(KUBEBUILDER_ASSETS)/etcd:
	@echo ">> building etcd $(ETCD_VERSION) into $(@D)"
	@mkdir -p $(@D) $(CACHE_DIR)/build/etcd-$(ETCD_VERSION)
	cd $(CACHE_DIR)/build/etcd-$(ETCD_VERSION) && \
	printf 'module shutter.local/tools/etcd\n\ngo 1.26\n' > go.mod && \
	GOFLAGS=-mod=mod $(GO) get go.etcd.io/etcd/server/v3@$(ETCD_VERSION) && \
	CGO_ENABLED=0 GOFLAGS=-mod=mod $(GO) build -trimpath -ldflags "-s -w" -o $@.tmp go.etcd.io/etcd/server/v3 && mv $@.tmp $@

# Helm, built from the module proxy once per version (~2 min cold).
$(HELM):
	GOBIN=$(@D) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(CONTROLLER_GEN):
	GOBIN=$(@D) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(BIN)/controller-gen: $(CONTROLLER_GEN)
	@mkdir -p $(BIN) && cp $< $@

.PHONY: generate
generate: $(BIN)/controller-gen ## Generate the CRD types' deepcopy code.
	$(BIN)/controller-gen object paths=./api/...

.PHONY: manifests
manifests: $(BIN)/controller-gen ## Generate the CRD and the RBAC role into config/.
	$(BIN)/controller-gen rbac:roleName=shutter-operator crd paths=./api/... paths=./controllers/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(MAKE) --no-print-directory chart-sync

CHART := charts/shutter-operator
# chart-sync copies the generated CRD and RBAC rules into the Helm chart, so
# that the chart and config/ are the same (a test checks it too).
.PHONY: chart-sync
chart-sync:
	@{ echo '{{- if .Values.crds.enabled }}'; \
	  sed -e '/^---$$/d' -e 's/^  annotations:$$/  annotations:\n    {{- if .Values.crds.keep }}\n    helm.sh\/resource-policy: keep\n    {{- end }}/' \
	    config/crd/bases/shutter.dev_screenshotservices.yaml; \
	  echo '{{- end }}'; } > $(CHART)/templates/crd.yaml
	@{ echo '{{- if .Values.rbac.create }}'; \
	  echo '# With watchNamespace, a Role in that namespace; else a ClusterRole.'; \
	  echo 'apiVersion: rbac.authorization.k8s.io/v1'; echo 'kind: {{ if .Values.watchNamespace }}Role{{ else }}ClusterRole{{ end }}'; echo 'metadata:'; \
	  echo '  name: {{ include "shutter-operator.fullname" . }}'; \
	  echo '  {{- with .Values.watchNamespace }}'; echo '  namespace: {{ . }}'; echo '  {{- end }}'; echo '  labels:'; \
	  echo '    {{- include "shutter-operator.labels" . | nindent 4 }}'; \
	  sed -n '/^rules:/,$$p' config/rbac/role.yaml; \
	  echo '---'; echo 'apiVersion: rbac.authorization.k8s.io/v1'; echo 'kind: {{ if .Values.watchNamespace }}RoleBinding{{ else }}ClusterRoleBinding{{ end }}'; echo 'metadata:'; \
	  echo '  name: {{ include "shutter-operator.fullname" . }}'; \
	  echo '  {{- with .Values.watchNamespace }}'; echo '  namespace: {{ . }}'; echo '  {{- end }}'; echo '  labels:'; \
	  echo '    {{- include "shutter-operator.labels" . | nindent 4 }}'; \
	  echo 'roleRef:'; echo '  apiGroup: rbac.authorization.k8s.io'; echo '  kind: {{ if .Values.watchNamespace }}Role{{ else }}ClusterRole{{ end }}'; \
	  echo '  name: {{ include "shutter-operator.fullname" . }}'; echo 'subjects:'; echo '  - kind: ServiceAccount'; \
	  echo '    name: {{ include "shutter-operator.serviceAccountName" . }}'; echo '    namespace: {{ .Release.Namespace }}'; \
	  echo '{{- end }}'; } > $(CHART)/templates/rbac.yaml

.PHONY: verify-generated
verify-generated: generate manifests ## Fail when generated files differ from the committed ones.
	@git diff --exit-code --stat -- api config $(CHART) || { echo "generated files are out of date: run make generate manifests and commit"; exit 1; }

.PHONY: build
build: ## Build bin/server and bin/operator.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/server ./cmd/server
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/operator ./cmd/operator

.PHONY: run
run: deps build ## Serve on :3000 with the embedded default (data in ./data).
	ALLOW_PRIVATE_TARGETS=$${ALLOW_PRIVATE_TARGETS:-false} $(BIN)/server serve

# golangci-lint, built from the module proxy once per version (~4 min cold).
$(GOLANGCI_LINT):
	@echo ">> building golangci-lint $(GOLANGCI_LINT_VERSION) into $(@D)"
	GOBIN=$(@D) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: lint
lint: $(GOLANGCI_LINT) ## gofmt, go vet, golangci-lint (.golangci.yml), and go.mod/go.sum tidy.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# -e: a test-only dependency of a dependency (pprof, for modernc.org/sqlite's
	@# tests) was for a time not served by the module proxy.
	@$(GO) mod tidy -e -diff 2>/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy -e"; exit 1; }
	$(GOLANGCI_LINT) run ./...

.PHONY: test
test: test-deps lint verify-generated ## Install components, run every test (CI=true: missing components fail).
	$(GO) test -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory fuzz FUZZ_ROUNDS=1

# Each fuzz target runs for a number of executions (one round is 2-7 s
# on two cores), not for a duration: with a duration, Go 1.26's fuzzing
# coordinator can report its own deadline as the target's failure, with no
# failing input (golang/go#75804, fixed in Go 1.27). FUZZ_ROUNDS multiplies
# the counts; FUZZTIME=1m runs each target for that duration instead.
FUZZ_TARGETS := FuzzParse:./internal/screenshot:80000 FuzzParseHeaders:./internal/screenshot:80000 \
	FuzzParseCookies:./internal/screenshot:80000 FuzzMatchPattern:./internal/screenshot:80000 \
	FuzzParseHost:./internal/netguard:50000 FuzzSplitSignature:./internal/account:80000 FuzzTake:./cmd/server:500
FUZZ_ROUNDS ?= 6
FUZZTIME ?=
.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZ_ROUNDS rounds of executions (or FUZZTIME); a failure fails the target.
	@set -e; for tp in $(FUZZ_TARGETS); do \
		t=$${tp%%:*}; rest=$${tp#*:}; p=$${rest%%:*}; n=$${rest#*:}; \
		budget=$(FUZZTIME); budget=$${budget:-$$((n * $(FUZZ_ROUNDS)))x}; \
		echo ">> $$t ($$p, $$budget)"; \
		if ! out=$$($(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $$budget $$p 2>&1); then echo "$$out" | tail -30; exit 1; fi; \
		echo "$$out" | tail -1; \
	done

$(BENCHSTAT):
	@echo ">> building benchstat into $(@D)"
	GOBIN=$(@D) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

.PHONY: bench-baseline bench-compare
bench-baseline: test-deps ## Save this machine's render benchmark (6 runs) as the baseline of bench-compare.
	@mkdir -p $(dir $(BENCH_BASELINE))
	$(GO) test -run '^$$' -bench 'Render$$|RenderPhases' -benchtime 20x -count 6 -timeout 60m ./internal/chromium | tee $(BENCH_BASELINE)

bench-compare: test-deps $(BENCHSTAT) ## Run the render benchmark (6 runs) and compare it with the saved baseline (benchstat).
	@test -f $(BENCH_BASELINE) || { echo "no baseline: run make bench-baseline first (on this code, this machine)"; exit 1; }
	$(GO) test -run '^$$' -bench 'Render$$|RenderPhases' -benchtime 20x -count 6 -timeout 60m ./internal/chromium | tee $(CACHE_DIR)/bench/render-new.txt
	$(BENCHSTAT) $(BENCH_BASELINE) $(CACHE_DIR)/bench/render-new.txt

.PHONY: bench
bench: test-deps ## Render benchmarks next to a raw chromedp baseline (one table with the ratio to raw), also through HTTP; cache hits; parser.
	$(GO) test -run '^$$' -bench . -benchtime 40x -timeout 30m ./internal/chromium
	$(GO) test -run '^$$' -bench TakeUncached -benchtime 40x -timeout 30m ./cmd/server
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./internal/httpapi ./internal/embedded ./internal/s3store
	$(GO) test -run '^$$' -bench . ./internal/screenshot ./internal/blocking

.PHONY: screenshots
screenshots: deps ## Screenshots of the dashboard, with seeded data, taken by Shutter itself, into docs/.
	@mkdir -p docs
	SHUTTER_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestDashboardScreenshots$$' ./cmd/server

.PHONY: clean
clean: ## Remove build output.
	rm -rf $(BIN)

IMAGE_REGISTRY ?= ghcr.io/shutterhq
IMAGE_TAG ?= $(VERSION)
.PHONY: docker-build
docker-build: ## Build the server, operator and browser images (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) --build-arg AUTOCONSENT_VERSION=$(AUTOCONSENT_VERSION) \
		--build-arg AUTOCONSENT_SHA256=$(AUTOCONSENT_SHA256) -t $(IMAGE_REGISTRY)/shutter-server:$(IMAGE_TAG) .
	docker build -f operator.Dockerfile -t $(IMAGE_REGISTRY)/shutter-operator:$(IMAGE_TAG) .
	docker build -f browser.Dockerfile -t $(IMAGE_REGISTRY)/shutter-browser:$(IMAGE_TAG) .

LOAD_DURATION ?= 3m
LOAD_RATE ?= 20
.PHONY: load
load: deps ## Load test: LOAD_RATE requests/s (above capacity) for LOAD_DURATION against a real server.
	SHUTTER_LOAD=$(LOAD_DURATION) SHUTTER_LOAD_RATE=$(LOAD_RATE) $(GO) test -count=1 -run '^TestLoad$$' -v -timeout 60m ./cmd/server
