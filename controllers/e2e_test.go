package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
	"github.com/shutterhq/shutter/internal/manifests"
	"github.com/shutterhq/shutter/internal/testenv"
)

// localPod runs a container of a pod template as a local process: the image
// becomes a local binary, volume mounts become temporary directories, and
// in-cluster service names become 127.0.0.1. Everything else — env, args,
// ports — is the template's.
type localPod struct {
	t      *testing.T
	c      *cluster
	ns     string
	mounts map[string]string // mount path → local directory
	rename map[string]string // in-cluster name → local address
}

func (p *localPod) local(v string) string {
	for from, to := range p.rename {
		v = strings.ReplaceAll(v, from, to)
	}
	for mount, dir := range p.mounts {
		if v == mount || strings.HasPrefix(v, mount+"/") {
			v = dir + strings.TrimPrefix(v, mount)
		}
		v = strings.ReplaceAll(v, "="+mount+"/", "="+dir+"/")
	}
	return v
}

// env resolves the container's environment as the kubelet would.
func (p *localPod) env(ct corev1.Container) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = p.local(v)
	}
	for _, from := range ct.EnvFrom {
		cm, err := get(p.c, p.ns, from.ConfigMapRef.Name, &corev1.ConfigMap{})
		if err != nil {
			p.t.Fatal(err)
		}
		for k, v := range cm.Data {
			set(k, v)
		}
	}
	for _, e := range ct.Env {
		if e.ValueFrom == nil {
			set(e.Name, e.Value)
			continue
		}
		if f := e.ValueFrom.FieldRef; f != nil {
			if f.FieldPath != "status.podIP" {
				p.t.Fatalf("env %s: field %s", e.Name, f.FieldPath)
			}
			set(e.Name, "127.0.0.1") // the local "pod" address
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		sec, err := get(p.c, p.ns, ref.Name, &corev1.Secret{})
		if err != nil {
			p.t.Fatalf("env %s: %v", e.Name, err)
		}
		set(e.Name, string(sec.Data[ref.Key]))
	}
	out := []string{"PATH=" + os.Getenv("PATH")}
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

func (p *localPod) start(bin string, args, env []string) *exec.Cmd {
	var local []string
	for _, a := range args {
		local = append(local, p.local(a))
	}
	cmd := exec.Command(bin, local...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
		}
		if p.t.Failed() {
			p.t.Logf("%s output:\n%s", filepath.Base(bin), logs.String())
		}
	})
	return cmd
}

func waitHTTP(t *testing.T, u string, want int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %d: %v %v", u, want, resp, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestManifestsRunAPlatform reconciles a ScreenshotService against the real
// API server, then runs its API and browser pod templates as local
// processes wired to real PostgreSQL, Redis and S3, and takes a screenshot
// through them.
func TestManifestsRunAPlatform(t *testing.T) {
	c := kube(t)
	chrome := testenv.Chrome(t)
	dsn := testenv.PostgresDB(t)
	redisAddr, _ := testenv.RedisAddr(t)
	s3 := testenv.NewS3(t)
	ctx := context.Background()

	ns := namespace(t, c)
	for name, data := range map[string]map[string]string{
		"real-db":    {"url": dsn},
		"real-redis": {"url": "redis://" + redisAddr},
		"real-s3":    {"accessKeyId": s3.AccessKey, "secretAccessKey": s3.SecretKey},
	} {
		if err := c.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}); err != nil {
			t.Fatal(err)
		}
	}
	s := &shutterv1.ScreenshotService{
		ObjectMeta: metav1.ObjectMeta{Name: "shots", Namespace: ns},
		Spec: shutterv1.ScreenshotServiceSpec{
			AllowPrivateTargets: true, // the test's page is on 127.0.0.1
			Database:            shutterv1.DatabaseSpec{URLSecretRef: shutterv1.SecretKeyRef{Name: "real-db", Key: "url"}},
			Redis:               &shutterv1.RedisSpec{URLSecretRef: shutterv1.SecretKeyRef{Name: "real-redis", Key: "url"}},
			Storage: &shutterv1.StorageSpec{Bucket: "e2e-shots", Endpoint: s3.URL(), Region: "us-east-1", UsePathStyle: true,
				CredentialsSecretName: "real-s3"},
		},
	}
	if err := c.client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	var api, browser *appsv1.Deployment
	eventually(t, "deployments", func() error {
		var err error
		if api, err = get(c, ns, manifests.APIName(s), &appsv1.Deployment{}); err != nil {
			return err
		}
		browser, err = get(c, ns, manifests.BrowserName(s), &appsv1.Deployment{})
		return err
	})

	server := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", server, "../cmd/server").CombinedOutput(); err != nil {
		t.Fatalf("build server: %v\n%s", err, out)
	}

	// The browser pod: the image's entrypoint is the server binary, whose
	// browser supervisor runs Chromium.
	bpod := &localPod{t: t, c: c, ns: ns, mounts: map[string]string{"/tmp": t.TempDir()}}
	bc := browser.Spec.Template.Spec.Containers[0]
	benv := append(bpod.env(bc), "CHROME_PATH="+chrome, fmt.Sprintf("BROWSER_LISTEN=127.0.0.1:%d", bc.Ports[0].ContainerPort))
	bpod.start(server, bc.Args, benv)
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d%s", bc.Ports[0].ContainerPort, bc.ReadinessProbe.HTTPGet.Path), 200)
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/json/version", bc.Ports[0].ContainerPort), http.StatusUnauthorized)

	// The API pod.
	apod := &localPod{t: t, c: c, ns: ns, mounts: map[string]string{"/data": t.TempDir(), "/tmp": t.TempDir()},
		rename: map[string]string{manifests.BrowserName(s) + "." + ns + ".svc": "127.0.0.1"}}
	ac := api.Spec.Template.Spec.Containers[0]
	env := apod.env(ac)
	apod.start(server, ac.Args, env)
	base := fmt.Sprintf("http://127.0.0.1:%d", ac.Ports[0].ContainerPort)
	waitHTTP(t, base+ac.ReadinessProbe.HTTPGet.Path, 200)
	waitHTTP(t, base+ac.LivenessProbe.HTTPGet.Path, 200)

	// A key, made with the pod's own environment, as kubectl exec would.
	keys := exec.Command(server, "keys", "create", "--plan", "pro", "--name", "e2e")
	keys.Env = env
	out, err := keys.Output()
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	secret := lines[len(lines)-1]

	page := testenv.HTMLServer(t, `<body style="margin:0;background:#0000ff"></body>`)
	q := url.Values{"api_key": {secret}, "url": {page.URL}, "format": {"png"}, "width": {"320"}, "height": {"200"}, "is_cached": {"true"}}
	for _, want := range []string{"MISS", "HIT"} {
		resp, err := http.Get(base + "/v1/screenshots/take?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want {
			t.Fatalf("screenshot: %d %s %.200s", resp.StatusCode, resp.Header.Get("X-Cache"), body)
		}
		img, _, err := image.Decode(bytes.NewReader(body))
		if err != nil || img.Bounds().Dx() != 320 || img.Bounds().Dy() != 200 {
			t.Fatalf("image: %v %v", err, img)
		}
		if r, g, b, _ := img.At(100, 100).RGBA(); r != 0 || g != 0 || b>>8 != 255 {
			t.Errorf("pixel = %v, want the page's blue", img.At(100, 100))
		}
	}
	// Every component the manifests wired is there and healthy.
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status string
		Checks []struct {
			Name, Status string
			Details      map[string]any
		}
	}
	json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	got := map[string]string{}
	for _, ch := range rep.Checks {
		got[ch.Name] = ch.Status
		if ch.Name == "database" && ch.Details["backend"] != "postgres" {
			t.Errorf("database backend %v", ch.Details)
		}
		if ch.Name == "s3" && ch.Details["configured"] != true {
			t.Errorf("s3 %v", ch.Details)
		}
	}
	if rep.Status != "healthy" || got["redis"] != "pass" || got["browser"] != "pass" || got["s3"] != "pass" {
		t.Errorf("health = %s %v", rep.Status, got)
	}
	// Metrics on the port the Service names.
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", ac.Ports[1].ContainerPort), 200)
}
