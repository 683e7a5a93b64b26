// Package deploytest checks what is shipped for installation: the Helm
// chart (linted and rendered by the real Helm, applied with server-side
// dry-run to a real kube-apiserver) and the Dockerfiles (their command
// lines run here, since images cannot be built on this machine).
package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
	"github.com/shutterhq/shutter/internal/manifests"
	"github.com/shutterhq/shutter/internal/testenv"
)

const (
	chart         = "../../charts/shutter-operator"
	platformChart = "../../charts/shutter-platform"
)

func helm(t *testing.T) string {
	t.Helper()
	p := os.Getenv("HELM")
	if p == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		p = filepath.Join(cache, "shutter", "helm-v3.22.0", "helm")
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, "helm", fmt.Errorf("%s: %w (run make test-deps)", p, err))
	}
	return p
}

func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// render runs helm template and splits the output into objects.
func render(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", "shutter", chart, "--namespace", "shutter-system", "--kube-version", testenv.KubeVersion}, args...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, out)
	}
	var objs []*unstructured.Unstructured
	for _, m := range splitYAML(t, out) {
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// splitYAML decodes a stream of YAML documents, leaving out empty ones.
func splitYAML(t *testing.T, out string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			docs = append(docs, m)
		}
	}
	return docs
}

func findNamed(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func find(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func TestHelmLint(t *testing.T) {
	for _, c := range []string{chart, platformChart} {
		for _, args := range [][]string{{}, {"-f", c + "/ci/full-values.yaml"}} {
			if out, err := runHelm(t, append([]string{"lint", "--strict", c}, args...)...); err != nil {
				t.Errorf("helm lint %s %v: %v\n%s", c, args, err, out)
			}
		}
	}
}

func TestSchemaRefusesBadValues(t *testing.T) {
	for name, values := range map[string]string{
		"wrong type":        "replicaCount: two\n",
		"unknown key":       "replicas: 2\n",
		"unknown nested":    "image:\n  repository: x\n  pullPolicy: Always\n  digest: sha256:1\n",
		"bad enum":          "image:\n  repository: x\n  pullPolicy: Sometimes\n",
		"port out of range": "metrics:\n  port: 0\n",
		"the old instance":  "instance:\n  enabled: true\n",
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			os.WriteFile(f, []byte(values), 0o600)
			out, err := runHelm(t, "template", "shutter", chart, "-f", f)
			if err == nil || !strings.Contains(out, "values don't meet the specifications of the schema") {
				t.Errorf("accepted:\n%s\n%s", values, out)
			}
		})
	}
}

func TestChartMatchesConfig(t *testing.T) {
	objs := render(t)
	// The CRD is the generated one, plus the keep policy.
	crd := find(objs, "CustomResourceDefinition")
	if crd == nil || crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Fatalf("chart CRD: %v", crd)
	}
	want := readYAML(t, "../../config/crd/bases/shutter.dev_screenshotservices.yaml")
	got := crd.DeepCopy().Object
	unstructured.RemoveNestedField(got, "metadata", "annotations", "helm.sh/resource-policy")
	if !equalJSON(got, want) {
		t.Error("the chart's CRD differs from config/crd/bases (run make manifests)")
	}
	// The ClusterRole has exactly the generated rules.
	var role, chartRole rbacv1.ClusterRole
	fromMap(t, readYAML(t, "../../config/rbac/role.yaml"), &role)
	fromMap(t, findNamed(objs, "ClusterRole", "shutter-shutter-operator").Object, &chartRole)
	if !equalJSON(role.Rules, chartRole.Rules) {
		t.Errorf("chart rules differ from config/rbac/role.yaml:\n%v\n%v", chartRole.Rules, role.Rules)
	}
	// Users' roles, aggregated into the built-in ones; the lease in a
	// namespaced Role.
	if ed, vw := findNamed(objs, "ClusterRole", "shutter-shutter-operator-editor"), findNamed(objs, "ClusterRole", "shutter-shutter-operator-viewer"); ed == nil || vw == nil ||
		ed.GetLabels()["rbac.authorization.k8s.io/aggregate-to-edit"] != "true" || vw.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"] != "true" {
		t.Error("no aggregated shutter-editor/shutter-viewer roles")
	}
	if le := findNamed(objs, "Role", "shutter-shutter-operator-leader-election"); le == nil || le.GetNamespace() != "shutter-system" {
		t.Error("no namespaced leader-election Role")
	}
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "coordination.k8s.io") {
			t.Error("leases are in the cluster-wide role")
		}
	}
	// With watchNamespace the operator's permissions are a Role there.
	scoped := render(t, "--set", "watchNamespace=screenshots")
	if r := findNamed(scoped, "Role", "shutter-shutter-operator"); r == nil || r.GetNamespace() != "screenshots" || findNamed(scoped, "ClusterRole", "shutter-shutter-operator") != nil ||
		findNamed(scoped, "RoleBinding", "shutter-shutter-operator") == nil {
		t.Error("watchNamespace did not make the operator's role a Role in that namespace")
	}
	// Toggles.
	if objs := render(t, "--set", "crds.enabled=false", "--set", "rbac.create=false", "--set", "metrics.enabled=false"); find(objs, "CustomResourceDefinition") != nil ||
		find(objs, "ClusterRole") != nil || find(objs, "Service") != nil {
		t.Error("toggles did not remove the CRD, RBAC or metrics Service")
	}
	if crd := find(render(t, "--set", "crds.keep=false"), "CustomResourceDefinition"); crd.GetAnnotations()["helm.sh/resource-policy"] != "" {
		t.Error("crds.keep=false still keeps")
	}
}

// TestRenderedManifestsAreAccepted applies every rendered object to a real
// kube-apiserver with server-side dry-run.
func TestRenderedManifestsAreAccepted(t *testing.T) {
	_, c := apiserver(t)
	ctx := context.Background()
	for _, ns := range []string{"shutter-system", "screenshots"} {
		ensure(t, c, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	for _, values := range [][]string{{}, {"-f", chart + "/ci/full-values.yaml"}} {
		objs := render(t, values...)
		// The CRD goes in for real first: the ScreenshotService needs it.
		crd := find(objs, "CustomResourceDefinition")
		ensure(t, c, crd.DeepCopy().Object)
		waitCRD(t, c)
		for _, o := range objs {
			o.SetNamespace(namespaceOf(o))
			err := c.Patch(ctx, o, client.Apply, client.DryRunAll, client.FieldOwner("helm-test"), client.ForceOwnership) //nolint:staticcheck // unstructured apply
			if err != nil {
				t.Errorf("%v: %s %s refused: %v", values, o.GetKind(), o.GetName(), err)
			}
		}
	}
	// The platform chart's ScreenshotService, with every section set.
	out, err := runHelm(t, "template", "shutter", platformChart, "--namespace", "screenshots", "--kube-version", testenv.KubeVersion, "-f", platformChart+"/ci/full-values.yaml")
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", platformChart, err, out)
	}
	for _, m := range splitYAML(t, out) {
		o := &unstructured.Unstructured{Object: m}
		if err := c.Patch(ctx, o, client.Apply, client.DryRunAll, client.FieldOwner("helm-test"), client.ForceOwnership); err != nil { //nolint:staticcheck
			t.Errorf("platform chart %s %s refused: %v", o.GetKind(), o.GetName(), err)
		}
	}
	// The sample and its Secrets, as the getting-started guide applies them.
	for _, f := range []string{"secrets.yaml", "shutter_v1alpha1_screenshotservice.yaml"} {
		for _, m := range readAllYAML(t, "../../config/samples/"+f) {
			o := &unstructured.Unstructured{Object: m}
			o.SetNamespace("screenshots")
			if err := c.Patch(ctx, o, client.Apply, client.DryRunAll, client.FieldOwner("guide"), client.ForceOwnership); err != nil { //nolint:staticcheck
				t.Errorf("sample %s %s refused: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
}

func namespaceOf(o *unstructured.Unstructured) string {
	switch o.GetKind() {
	case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Namespace":
		return ""
	}
	if o.GetNamespace() != "" {
		return o.GetNamespace()
	}
	return "shutter-system"
}

func ensure(t *testing.T, c client.Client, m map[string]any) {
	t.Helper()
	o := &unstructured.Unstructured{Object: m}
	if err := c.Patch(context.Background(), o, client.Apply, client.FieldOwner("helm-test"), client.ForceOwnership); err != nil { //nolint:staticcheck
		t.Fatal(err)
	}
}

func waitCRD(t *testing.T, c client.Client) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var l shutterv1.ScreenshotServiceList
		if err := c.List(context.Background(), &l); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("CRD not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	docs := readAllYAML(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents", path, len(docs))
	}
	return docs[0]
}

func readAllYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(buf), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
}

func fromMap(t *testing.T, m map[string]any, v any) {
	t.Helper()
	buf, _ := json.Marshal(m)
	if err := json.Unmarshal(buf, v); err != nil {
		t.Fatal(err)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	var xa, ya any
	json.Unmarshal(x, &xa)
	json.Unmarshal(y, &ya)
	x, _ = json.Marshal(xa)
	y, _ = json.Marshal(ya)
	return bytes.Equal(x, y)
}

var jsonArray = regexp.MustCompile(`^\s*(ENTRYPOINT|CMD)\s+(\[.*\])\s*$`)

// dockerExec reads the ENTRYPOINT and CMD of a Dockerfile (exec form).
func dockerExec(t *testing.T, path string) (entrypoint, cmd []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := jsonArray.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var v []string
		if err := json.Unmarshal([]byte(m[2]), &v); err != nil {
			t.Fatalf("%s: %s is not exec form: %v", path, m[1], err)
		}
		if m[1] == "ENTRYPOINT" {
			entrypoint = v
		} else {
			cmd = v
		}
	}
	return entrypoint, cmd
}

// TestBrowserImageCommandLine runs the browser image's command line (tini,
// the server binary's browser supervisor and the headless shell, as Debian
// installs them): the supervisor answers its probes, and DevTools only with
// the browser token. The operator's browser pods pass the same arguments.
func TestBrowserImageCommandLine(t *testing.T) {
	testenv.Chrome(t)
	entry, args := dockerExec(t, "../../browser.Dockerfile")
	if want := manifests.BrowserArgs(&shutterv1.ScreenshotService{}); !slices.Equal(args, want) {
		t.Errorf("image CMD %v\ndiffers from the operator's browser args %v", args, want)
	}
	server := filepath.Join(t.TempDir(), "server")
	build := exec.Command("go", "build", "-o", server, "./cmd/server")
	build.Dir = "../.."
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build server: %v\n%s", err, msg)
	}
	var local []string
	for _, p := range entry {
		switch {
		case p == "/server":
			p = server
		case strings.HasPrefix(p, "/"):
			if _, err := os.Stat(p); err != nil {
				testenv.Missing(t, p, err)
			}
		}
		local = append(local, p)
	}
	port, _ := testenv.FreePort()
	dir := t.TempDir()
	token := "image-test-token-0123456789abcdef"
	cmd := exec.Command(local[0], append(local[1:], args...)...)
	cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + dir, "PATH=" + os.Getenv("PATH"), "BROWSER_TOKEN=" + token,
		fmt.Sprintf("BROWSER_LISTEN=127.0.0.1:%d", port), "LOG_LEVEL=error"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor did not become ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for auth, want := range map[string]int{"": 401, "Bearer " + token: 200} {
		req, _ := http.NewRequest(http.MethodGet, base+"/json/version", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == 200 && !strings.Contains(string(body), "webSocketDebuggerUrl")) {
			t.Errorf("/json/version with %q: %d %s", auth, resp.StatusCode, body)
		}
	}
}

// TestServerAndOperatorImagesAreStatic builds the binaries as the
// Dockerfiles do and checks they need no C library (the base image has none)
// and that the entrypoints are where the chart and docs say.
func TestServerAndOperatorImagesAreStatic(t *testing.T) {
	for file, c := range map[string]struct{ pkg, entry string }{
		"../../Dockerfile":          {"./cmd/server", "/server"},
		"../../operator.Dockerfile": {"./cmd/operator", "/operator"},
	} {
		entry, _ := dockerExec(t, file)
		if len(entry) != 1 || entry[0] != c.entry {
			t.Errorf("%s ENTRYPOINT %v, want [%s]", file, entry, c.entry)
		}
		out := filepath.Join(t.TempDir(), "bin")
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, c.pkg)
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", c.pkg, err, msg)
		}
		f, err := elf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked", c.pkg)
			}
		}
		f.Close()
	}
}

// TestNoLatestImages: nothing the project ships names a :latest image —
// not the kustomize config and samples, not the chart as rendered (with
// its defaults and with every option on) — and the operator is told the
// release whose server and browser images it runs.
func TestNoLatestImages(t *testing.T) {
	err := filepath.WalkDir("../../config", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), ":latest") {
			t.Errorf("%s names a :latest image", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runHelm(t, "template", "shutter", chart, "--namespace", "shutter-system", "--kube-version", testenv.KubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, ":latest") {
		t.Error("the rendered chart names a :latest image")
	}
	dep := find(render(t), "Deployment")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	image, args := c["image"].(string), fmt.Sprint(c["args"])
	tag := image[strings.LastIndex(image, ":")+1:]
	if tag == "" || !strings.Contains(args, "--image-tag="+tag) {
		t.Errorf("operator image %s, args %s: the platform's images should be the operator's release", image, args)
	}
}

// TestHelmInstallOperatorThenPlatform installs for real — helm install on
// an empty kube-apiserver, the CRD not installed before — the operator
// chart, then the platform chart (a ScreenshotService; in one release with
// its CRD it could not be installed), upgrades the platform and uninstalls
// both.
func TestHelmInstallOperatorThenPlatform(t *testing.T) {
	env, c := apiserver(t)
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "helm", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	helmDo := func(args ...string) {
		t.Helper()
		if out, err := runHelm(t, append(args, "--kubeconfig", kubeconfig)...); err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
	}
	ctx := context.Background()
	helmDo("install", "shutter-operator", chart, "--namespace", "shutter-system", "--create-namespace")
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shutter-system", Name: "shutter-operator"}, &dep); err != nil {
		t.Fatalf("the operator's Deployment: %v", err)
	}
	helmDo("install", "shutter", platformChart, "--namespace", "screenshots", "--create-namespace", "-f", platformChart+"/ci/full-values.yaml")
	var svc shutterv1.ScreenshotService
	key := client.ObjectKey{Namespace: "screenshots", Name: "shutter"}
	if err := c.Get(ctx, key, &svc); err != nil || *svc.Spec.Replicas != 3 || svc.Spec.Ingress.Host != "shots.example.com" {
		t.Fatalf("the platform's ScreenshotService: %v %+v", err, svc.Spec)
	}
	helmDo("upgrade", "shutter", platformChart, "--namespace", "screenshots", "-f", platformChart+"/ci/full-values.yaml", "--set", "spec.replicas=4")
	if err := c.Get(ctx, key, &svc); err != nil || *svc.Spec.Replicas != 4 {
		t.Errorf("after upgrade: %v %v", err, svc.Spec.Replicas)
	}
	helmDo("uninstall", "shutter", "--namespace", "screenshots")
	if err := c.Get(ctx, key, &svc); err == nil && svc.DeletionTimestamp.IsZero() {
		t.Error("the ScreenshotService outlived the platform's uninstall")
	}
	helmDo("uninstall", "shutter-operator", "--namespace", "shutter-system")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shutter-system", Name: "shutter-operator"}, &dep); err == nil && dep.DeletionTimestamp.IsZero() {
		t.Error("the operator outlived its uninstall")
	}
}

// TestMonitoringObjects: with the Prometheus Operator's API present the
// chart renders the operator's PodMonitor and the alert rules, never
// otherwise; the Grafana dashboard is valid JSON; and every metric the
// dashboard and the alerts name is one the programs export.
func TestMonitoringObjects(t *testing.T) {
	full := []string{"-f", chart + "/ci/full-values.yaml"}
	without := render(t, full...)
	if find(without, "PodMonitor") != nil || find(without, "PrometheusRule") != nil {
		t.Error("Prometheus Operator objects rendered for a cluster without its API")
	}
	if find(without, "Service") != nil {
		t.Error("a Service exposes the operator's metrics")
	}
	with := render(t, append(full, "--api-versions", "monitoring.coreos.com/v1")...)
	pm, rule, dash := find(with, "PodMonitor"), find(with, "PrometheusRule"), find(with, "ConfigMap")
	if pm == nil || rule == nil || dash == nil {
		t.Fatalf("PodMonitor %v, PrometheusRule %v, dashboard %v", pm != nil, rule != nil, dash != nil)
	}
	if pm.GetLabels()["release"] != "prometheus" {
		t.Errorf("PodMonitor labels %v", pm.GetLabels())
	}
	board, _, _ := unstructured.NestedString(dash.Object, "data", "shutter.json")
	var parsed struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(board), &parsed); err != nil || len(parsed.Panels) < 6 {
		t.Fatalf("dashboard: %v (%d panels)", err, len(parsed.Panels))
	}
	exported := exportedMetrics(t)
	name := regexp.MustCompile(`shutter_[a-z_]+`)
	check := func(where, expr string) {
		for _, m := range name.FindAllString(expr, -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
			if !exported[base] {
				t.Errorf("%s names %s, which nothing exports", where, m)
			}
		}
	}
	for _, p := range parsed.Panels {
		for _, tg := range p.Targets {
			check("the dashboard", tg.Expr)
		}
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	rules, _ := groups[0].(map[string]any)["rules"].([]any)
	if len(rules) != 3 {
		t.Fatalf("alert rules %v", rules)
	}
	for _, r := range rules {
		check("an alert", r.(map[string]any)["expr"].(string))
	}
}

// exportedMetrics are the metric names the programs' sources register.
func exportedMetrics(t *testing.T) map[string]bool {
	out := map[string]bool{}
	lit := regexp.MustCompile(`"(shutter_[a-z_]+)"`)
	for _, dir := range []string{"../../internal", "../../cmd"} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, _ := os.ReadFile(p)
			for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
			return nil
		})
	}
	if len(out) < 10 {
		t.Fatalf("only %d metric names found", len(out))
	}
	return out
}

// apiserver starts a kube-apiserver of its own for the test and a client
// that knows the project's types.
func apiserver(t *testing.T) (*envtest.Environment, client.Client) {
	t.Helper()
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.KubeAssets(t)}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Stop() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(shutterv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}
