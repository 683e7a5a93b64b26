package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
	"github.com/shutterhq/shutter/internal/manifests"
)

var nsCounter atomic.Int64

// namespace makes a fresh namespace with the Secrets a ScreenshotService
// references.
func namespace(t *testing.T, c *cluster) string {
	t.Helper()
	ns := fmt.Sprintf("t%d-%d", time.Now().Unix()%100000, nsCounter.Add(1))
	ctx := context.Background()
	if err := c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string]string{
		"shutter-db":    {"url": "postgres://shutter:pw@db:5432/shutter"},
		"shutter-redis": {"url": "redis://redis:6379"},
		"shutter-s3":    {"accessKeyId": "AKID", "secretAccessKey": "SECRET"},
	} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
		if err := c.client.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

func sample(ns, name string) *shutterv1.ScreenshotService {
	return &shutterv1.ScreenshotService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: shutterv1.ScreenshotServiceSpec{
			Database: shutterv1.DatabaseSpec{URLSecretRef: shutterv1.SecretKeyRef{Name: "shutter-db", Key: "url"}},
			Redis:    &shutterv1.RedisSpec{URLSecretRef: shutterv1.SecretKeyRef{Name: "shutter-redis", Key: "url"}},
			Storage: &shutterv1.StorageSpec{Bucket: "shots", Endpoint: "https://s3.example.com", CredentialsSecretName: "shutter-s3",
				UsePathStyle: true},
		},
	}
}

// eventually polls f until it returns nil.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get[T client.Object](c *cluster, ns, name string, obj T) (T, error) {
	err := c.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj)
	return obj, err
}

func TestCreateMakesEveryObject(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	s := sample(ns, "shots")
	if err := c.client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// Defaults come from the API server.
	got, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
	if *got.Spec.Replicas != 2 || got.Spec.MaxConcurrentScreenshots != 10 || got.Spec.ScreenshotTimeout.Duration != 30*time.Second || got.Spec.RateLimitWindow.Duration != time.Minute ||
		*got.Spec.Browser.Replicas != 2 || got.Spec.Browser.ShmSize.String() != "1Gi" || got.Spec.NodeEnv != "production" ||
		got.Spec.Storage.Region != "auto" || got.Spec.Service.Port != 80 {
		t.Errorf("defaults = %+v", got.Spec)
	}
	objects := map[string]client.Object{
		"shots-auth":    &corev1.Secret{},
		"shots-config":  &corev1.ConfigMap{},
		"shots-api":     &appsv1.Deployment{},
		"shots":         &corev1.Service{},
		"shots-browser": &appsv1.Deployment{},
	}
	for name, obj := range objects {
		eventually(t, "object "+name, func() error {
			_, err := get(c, ns, name, obj)
			return err
		})
		refs := obj.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != "ScreenshotService" || refs[0].Name != "shots" || !ptr.Deref(refs[0].Controller, false) {
			t.Errorf("%s owner references = %+v", name, refs)
		}
	}
	for _, o := range []struct {
		name string
		obj  client.Object
	}{
		{"shots-browser", &corev1.Service{}}, {"shots-browser", &networkingv1.NetworkPolicy{}}, {"shots-api", &networkingv1.NetworkPolicy{}},
		{"shots-metrics", &corev1.Service{}},
		{"shots-api", &policyv1.PodDisruptionBudget{}}, {"shots-browser", &policyv1.PodDisruptionBudget{}},
	} {
		eventually(t, fmt.Sprintf("%T %s", o.obj, o.name), func() error {
			_, err := get(c, ns, o.name, o.obj)
			return err
		})
	}

	api, _ := get(c, ns, "shots-api", &appsv1.Deployment{})
	ct := api.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range ct.Env {
		env[e.Name] = e
	}
	for name, ref := range map[string]string{"DATABASE_URL": "shutter-db/url", "REDIS_URL": "shutter-redis/url",
		"AUTH_SECRET": "shots-auth/AUTH_SECRET", "STORAGE_ACCESS_KEY_ID": "shutter-s3/accessKeyId", "STORAGE_SECRET_ACCESS_KEY": "shutter-s3/secretAccessKey"} {
		e, ok := env[name]
		if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key != ref {
			t.Errorf("env %s = %+v, want from %s", name, e, ref)
		}
	}
	if ct.ReadinessProbe.HTTPGet.Path != "/health/ready" || ct.LivenessProbe.HTTPGet.Path != "/health/live" || ct.StartupProbe == nil ||
		!*ct.SecurityContext.ReadOnlyRootFilesystem || !*ct.SecurityContext.RunAsNonRoot {
		t.Errorf("api container = %+v", ct)
	}
	if api.Spec.Template.Annotations[manifests.ConfigHashAnnotation] == "" {
		t.Error("no config hash on the API pods")
	}
	cm, _ := get(c, ns, "shots-config", &corev1.ConfigMap{})
	if cm.Data["BROWSER_URLS"] != "dns://shots-browser."+ns+".svc:9222" || cm.Data["STORAGE_BUCKET"] != "shots" || cm.Data["MAX_CONCURRENT_SCREENSHOTS"] != "10" {
		t.Errorf("settings = %v", cm.Data)
	}
	for _, v := range cm.Data {
		if strings.Contains(v, "pw@") || strings.Contains(v, "SECRET") {
			t.Errorf("a secret value reached the ConfigMap: %v", cm.Data)
		}
	}
	bsvc, _ := get(c, ns, "shots-browser", &corev1.Service{})
	if bsvc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("browser service is not headless: %q", bsvc.Spec.ClusterIP)
	}

	eventually(t, "status", func() error {
		got, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
		if got.Status.ObservedGeneration != got.Generation || got.Status.URL != "http://shots."+ns+".svc:80" ||
			got.Status.Selector == "" || meta.FindStatusCondition(got.Status.Conditions, shutterv1.ConditionReady) == nil {
			return fmt.Errorf("status = %+v", got.Status)
		}
		return nil
	})
}

func TestChangesFollowAndRollPods(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	if err := c.client.Create(ctx, sample(ns, "shots")); err != nil {
		t.Fatal(err)
	}
	var hash string
	eventually(t, "api deployment", func() error {
		d, err := get(c, ns, "shots-api", &appsv1.Deployment{})
		hash = d.Spec.Template.Annotations[manifests.ConfigHashAnnotation]
		return err
	})
	s, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
	s.Spec.Replicas = ptr.To[int32](4)
	s.Spec.MaxConcurrentScreenshots = 3
	s.Spec.Plans.Free.RequestsPerWindow = ptr.To[int32](5)
	s.Spec.Image = "registry.example/shutter-server:v2"
	s.Spec.Browser.Replicas = ptr.To[int32](3)
	if err := c.client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "changes applied", func() error {
		d, _ := get(c, ns, "shots-api", &appsv1.Deployment{})
		b, _ := get(c, ns, "shots-browser", &appsv1.Deployment{})
		cm, _ := get(c, ns, "shots-config", &corev1.ConfigMap{})
		switch {
		case *d.Spec.Replicas != 4 || d.Spec.Template.Spec.Containers[0].Image != "registry.example/shutter-server:v2":
			return fmt.Errorf("api deployment: replicas %d image %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
		case *b.Spec.Replicas != 3:
			return fmt.Errorf("browser replicas %d", *b.Spec.Replicas)
		case cm.Data["MAX_CONCURRENT_SCREENSHOTS"] != "3" || cm.Data["PLAN_FREE_RATE_LIMIT"] != "5":
			return fmt.Errorf("settings %v", cm.Data)
		case d.Spec.Template.Annotations[manifests.ConfigHashAnnotation] == hash:
			return fmt.Errorf("config hash did not change")
		}
		hash = d.Spec.Template.Annotations[manifests.ConfigHashAnnotation]
		return nil
	})
	// Rotating a referenced credential rolls the pods too.
	db, _ := get(c, ns, "shutter-db", &corev1.Secret{})
	db.Data["url"] = []byte("postgres://shutter:new@db:5432/shutter")
	if err := c.client.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	eventually(t, "hash after rotation", func() error {
		d, _ := get(c, ns, "shots-api", &appsv1.Deployment{})
		if d.Spec.Template.Annotations[manifests.ConfigHashAnnotation] == hash {
			return fmt.Errorf("config hash did not change")
		}
		return nil
	})
	// kubectl scale goes through the scale subresource.
	sc := &autoscalingv1.Scale{}
	if err := c.client.SubResource("scale").Get(ctx, s, sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 1
	if err := c.client.SubResource("scale").Update(ctx, s, client.WithSubResourceBody(sc)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "scaled", func() error {
		d, _ := get(c, ns, "shots-api", &appsv1.Deployment{})
		if *d.Spec.Replicas != 1 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
}

func TestDeletedObjectComesBack(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	if err := c.client.Create(ctx, sample(ns, "shots")); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{&corev1.Service{}, &networkingv1.NetworkPolicy{}, &appsv1.Deployment{}} {
		var uid types.UID
		eventually(t, "object", func() error {
			_, err := get(c, ns, "shots-browser", obj)
			uid = obj.GetUID()
			return err
		})
		if err := c.client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("%T back", obj), func() error {
			fresh := obj.DeepCopyObject().(client.Object)
			if _, err := get(c, ns, "shots-browser", fresh); err != nil {
				return err
			}
			if fresh.GetUID() == uid {
				return fmt.Errorf("not deleted yet")
			}
			return nil
		})
	}
}

func TestAuthSecretIsStable(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	if err := c.client.Create(ctx, sample(ns, "shots")); err != nil {
		t.Fatal(err)
	}
	var first []byte
	eventually(t, "auth secret", func() error {
		sec, err := get(c, ns, "shots-auth", &corev1.Secret{})
		first = sec.Data[manifests.AuthSecretKey]
		if err == nil && len(first) < 32 {
			return fmt.Errorf("short secret %d", len(first))
		}
		return err
	})
	// Many reconciles, and an operator restart, later…
	s, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
	s.Spec.MaxConcurrentScreenshots = 7
	c.client.Update(ctx, s)
	c.stopManager()
	if err := c.startManager(); err != nil {
		t.Fatal(err)
	}
	s, _ = get(c, ns, "shots", &shutterv1.ScreenshotService{})
	s.Spec.MaxConcurrentScreenshots = 8
	c.client.Update(ctx, s)
	eventually(t, "reconciled after restart", func() error {
		cm, _ := get(c, ns, "shots-config", &corev1.ConfigMap{})
		if cm.Data["MAX_CONCURRENT_SCREENSHOTS"] != "8" {
			return fmt.Errorf("settings %v", cm.Data["MAX_CONCURRENT_SCREENSHOTS"])
		}
		return nil
	})
	sec, _ := get(c, ns, "shots-auth", &corev1.Secret{})
	if string(sec.Data[manifests.AuthSecretKey]) != string(first) {
		t.Fatal("AUTH_SECRET changed")
	}
}

func TestConditionsFollowDeployments(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	if err := c.client.Create(ctx, sample(ns, "shots")); err != nil {
		t.Fatal(err)
	}
	cond := func(typ string) *metav1.Condition {
		s, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
		return meta.FindStatusCondition(s.Status.Conditions, typ)
	}
	// Before any pod exists, the status says so: desired two, observed none
	// (what the scale subresource reports to an autoscaler).
	eventually(t, "observed replicas", func() error {
		s, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
		if s.Status.DesiredReplicas != 2 || s.Status.Replicas != 0 {
			return fmt.Errorf("status replicas %d, desired %d", s.Status.Replicas, s.Status.DesiredReplicas)
		}
		return nil
	})
	eventually(t, "not ready without pods", func() error {
		if r := cond(shutterv1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse || r.Reason != shutterv1.ReasonAPIUnavailable {
			return fmt.Errorf("ready = %+v", r)
		}
		return nil
	})
	// There is no kubelet: play its part (again, should a reconcile have
	// moved the generation meanwhile).
	kubelet := func() {
		for _, name := range []string{"shots-api", "shots-browser"} {
			d, _ := get(c, ns, name, &appsv1.Deployment{})
			n := *d.Spec.Replicas
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
			c.client.Status().Update(ctx, d)
		}
	}
	eventually(t, "ready", func() error {
		kubelet()
		s, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
		r, p, d := cond(shutterv1.ConditionReady), cond(shutterv1.ConditionProgressing), cond(shutterv1.ConditionDegraded)
		if r == nil || r.Status != metav1.ConditionTrue || p.Status != metav1.ConditionFalse || d.Status != metav1.ConditionFalse ||
			s.Status.ReadyReplicas != 2 || s.Status.BrowserReadyReplicas != 2 || s.Status.Replicas != 2 || s.Status.DesiredReplicas != 2 {
			return fmt.Errorf("conditions %+v %+v %+v status %+v", r, p, d, s.Status)
		}
		return nil
	})
	// Losing the browsers degrades and un-readies.
	b, _ := get(c, ns, "shots-browser", &appsv1.Deployment{})
	b.Status.ReadyReplicas, b.Status.AvailableReplicas = 0, 0
	c.client.Status().Update(ctx, b)
	eventually(t, "browsers lost", func() error {
		r, d := cond(shutterv1.ConditionReady), cond(shutterv1.ConditionDegraded)
		if r.Reason != shutterv1.ReasonBrowsersUnavailable || d.Status != metav1.ConditionTrue || d.Reason != shutterv1.ReasonReplicasMissing {
			return fmt.Errorf("conditions %+v %+v", r, d)
		}
		return nil
	})
	// A missing Secret is reported.
	c.client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shutter-redis", Namespace: ns}})
	eventually(t, "secret missing", func() error {
		if d := cond(shutterv1.ConditionDegraded); d.Reason != shutterv1.ReasonSecretMissing || !strings.Contains(d.Message, "shutter-redis/url") {
			return fmt.Errorf("degraded %+v", d)
		}
		return nil
	})
}

func TestInvalidSpecsRejected(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	for _, tc := range []struct {
		name   string
		mutate func(*shutterv1.ScreenshotService)
		msg    string
	}{
		{"negative replicas", func(s *shutterv1.ScreenshotService) { s.Spec.Replicas = ptr.To[int32](-1) }, "spec.replicas"},
		{"no slots", func(s *shutterv1.ScreenshotService) { s.Spec.MaxConcurrentScreenshots = -3 }, "spec.maxConcurrentScreenshots"},
		{"too many slots", func(s *shutterv1.ScreenshotService) { s.Spec.MaxConcurrentScreenshots = 1000 }, "spec.maxConcurrentScreenshots"},
		{"short timeout", func(s *shutterv1.ScreenshotService) {
			s.Spec.ScreenshotTimeout = &metav1.Duration{Duration: 500 * time.Millisecond}
		}, "screenshotTimeout must be between 1s and 10m"},
		{"load above timeout", func(s *shutterv1.ScreenshotService) {
			s.Spec.ScreenshotTimeout = &metav1.Duration{Duration: 10 * time.Second}
			s.Spec.PageLoadTimeout = &metav1.Duration{Duration: 20 * time.Second}
		}, "pageLoadTimeout must not exceed screenshotTimeout"},
		{"node env", func(s *shutterv1.ScreenshotService) { s.Spec.NodeEnv = "staging" }, "spec.nodeEnv"},
		{"no database", func(s *shutterv1.ScreenshotService) { s.Spec.Database = shutterv1.DatabaseSpec{} }, "spec.database.urlSecretRef"},
		{"bad endpoint", func(s *shutterv1.ScreenshotService) { s.Spec.Storage.Endpoint = "s3.example.com" }, "spec.storage.endpoint"},
		{"service type", func(s *shutterv1.ScreenshotService) { s.Spec.Service.Type = "ExternalName" }, "spec.service.type"},
		{"negative quota", func(s *shutterv1.ScreenshotService) { s.Spec.Plans.Pro.ScreenshotsPerMonth = ptr.To[int32](-1) }, "spec.plans.pro.screenshotsPerMonth"},
		{"env overrides the port", func(s *shutterv1.ScreenshotService) {
			s.Spec.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "PORT", Value: "8080"}}
		}, "the operator owns them"},
		{"env overrides discovery", func(s *shutterv1.ScreenshotService) {
			s.Spec.Env = []corev1.EnvVar{{Name: "BROWSER_URLS", Value: "http://elsewhere:9222"}}
		}, "the operator owns them"},
		{"autoscaler max below min", func(s *shutterv1.ScreenshotService) {
			s.Spec.Autoscaling.API = &shutterv1.AutoscalingSpec{MinReplicas: 4, MaxReplicas: 2, TargetCPUUtilization: ptr.To[int32](50)}
		}, "maxReplicas must not be below minReplicas"},
		{"autoscaler without a target", func(s *shutterv1.ScreenshotService) {
			s.Spec.Autoscaling.Browser = &shutterv1.AutoscalingSpec{MinReplicas: 1, MaxReplicas: 3}
		}, "set targetCPUUtilization, targetBusyPerPod or both"},
		{"ingress without a host", func(s *shutterv1.ScreenshotService) { s.Spec.Ingress = &shutterv1.IngressSpec{} }, "spec.ingress.host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sample(ns, "bad-"+strings.ReplaceAll(tc.name, " ", "-"))
			tc.mutate(s)
			err := c.client.Create(context.Background(), s)
			if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want Invalid mentioning %q", err, tc.msg)
			}
		})
	}
}

// TestEnvMayTuneSettings: spec.env may set the settings the operator does
// not own.
func TestEnvMayTuneSettings(t *testing.T) {
	c := kube(t)
	s := sample(namespace(t, c), "tuned")
	s.Spec.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "NETWORK_IDLE_MS", Value: "50"}}
	if err := c.client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func TestSampleIsAccepted(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	buf, err := os.ReadFile("../config/samples/shutter_v1alpha1_screenshotservice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var s shutterv1.ScreenshotService
	if err := yaml.UnmarshalStrict(buf, &s); err != nil {
		t.Fatal(err)
	}
	s.Namespace = ns
	if err := c.client.Create(context.Background(), &s); err != nil {
		t.Fatalf("sample refused: %v", err)
	}
}

// TestBrowserToken: the generated Secret carries a browser token that both
// Deployments read; the rotate annotation makes a new one, keeps the old as
// BROWSER_TOKEN_PREVIOUS (accepted by both sides while the pods roll), and
// rolls both pod templates — once per annotation value.
func TestBrowserToken(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	if err := c.client.Create(ctx, sample(ns, "shots")); err != nil {
		t.Fatal(err)
	}
	var first string
	hashes := func() (string, string) {
		api, _ := get(c, ns, "shots-api", &appsv1.Deployment{})
		br, _ := get(c, ns, "shots-browser", &appsv1.Deployment{})
		return api.Spec.Template.Annotations[manifests.ConfigHashAnnotation], br.Spec.Template.Annotations[manifests.ConfigHashAnnotation]
	}
	eventually(t, "browser token", func() error {
		sec, err := get(c, ns, "shots-auth", &corev1.Secret{})
		if err != nil {
			return err
		}
		first = string(sec.Data[manifests.BrowserTokenKey])
		if len(first) < 32 {
			return fmt.Errorf("token %q", first)
		}
		if a, b := hashes(); a == "" || b == "" {
			return fmt.Errorf("hashes %q %q", a, b)
		}
		return nil
	})
	apiBefore, browserBefore := hashes()
	rotate := func(v string) {
		// A merge patch: the operator writes the status meanwhile, and an
		// update would conflict with it.
		s, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
		patch := client.MergeFrom(s.DeepCopy())
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[manifests.RotateBrowserTokenAnnotation] = v
		if err := c.client.Patch(ctx, s, patch); err != nil {
			t.Fatal(err)
		}
	}
	rotate("2026-11-22")
	var second string
	eventually(t, "rotated", func() error {
		sec, _ := get(c, ns, "shots-auth", &corev1.Secret{})
		second = string(sec.Data[manifests.BrowserTokenKey])
		if second == first || string(sec.Data[manifests.BrowserTokenPreviousKey]) != first {
			return fmt.Errorf("token %q previous %q", second, sec.Data[manifests.BrowserTokenPreviousKey])
		}
		if a, b := hashes(); a == apiBefore || b == browserBefore {
			return fmt.Errorf("pods did not roll: %s %s", a, b)
		}
		return nil
	})
	// Reconciles do not rotate again for the same request.
	time.Sleep(2 * time.Second)
	if sec, _ := get(c, ns, "shots-auth", &corev1.Secret{}); string(sec.Data[manifests.BrowserTokenKey]) != second {
		t.Fatal("the token changed again without a new request")
	}
}

// TestDeletingServiceCreatesNothing: while a ScreenshotService is being
// deleted (another controller's finalizer holds it), a child that goes
// does not come back.
func TestDeletingServiceCreatesNothing(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	s := sample(ns, "shots")
	s.Finalizers = []string{"test.shutter.dev/hold"}
	if err := c.client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "browser service", func() error {
		_, err := get(c, ns, "shots-browser", &corev1.Service{})
		return err
	})
	if err := c.client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	// The controller's cache learns of the deletion asynchronously; a
	// reconcile that still saw the old object could not know.
	time.Sleep(time.Second)
	svc, _ := get(c, ns, "shots-browser", &corev1.Service{})
	if err := c.client.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if _, err := get(c, ns, "shots-browser", &corev1.Service{}); err == nil {
		t.Error("a child of a service being deleted was created again")
	}
	cur, _ := get(c, ns, "shots", &shutterv1.ScreenshotService{})
	cur.Finalizers = nil
	if err := c.client.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
}

// TestIngressFollowsTheSpec: spec.ingress makes an Ingress (accepted by the
// apiserver) and status.url its external address; removing it removes the
// Ingress, and status.url falls back to the in-cluster address.
func TestIngressFollowsTheSpec(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	s := sample(ns, "shots")
	s.Spec.Ingress = &shutterv1.IngressSpec{Host: "shots.example.com", TLSSecretName: "shots-tls"}
	if err := c.client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ingress and status.url", func() error {
		ing, err := get(c, ns, "shots", &networkingv1.Ingress{})
		if err != nil {
			return err
		}
		if ing.Spec.Rules[0].Host != "shots.example.com" || ing.Spec.TLS[0].SecretName != "shots-tls" {
			return fmt.Errorf("ingress %+v", ing.Spec)
		}
		cur, err := get(c, ns, "shots", &shutterv1.ScreenshotService{})
		if err != nil {
			return err
		}
		if cur.Status.URL != "https://shots.example.com" || cur.Status.ClusterURL != "http://shots."+ns+".svc:80" {
			return fmt.Errorf("status url %q cluster %q", cur.Status.URL, cur.Status.ClusterURL)
		}
		return nil
	})
	updateService(t, c, ns, "shots", func(cur *shutterv1.ScreenshotService) {
		cur.Spec.Ingress = nil
	})
	eventually(t, "ingress gone", func() error {
		if _, err := get(c, ns, "shots", &networkingv1.Ingress{}); err == nil {
			return fmt.Errorf("the Ingress is still there")
		}
		cur, err := get(c, ns, "shots", &shutterv1.ScreenshotService{})
		if err != nil {
			return err
		}
		if cur.Status.URL != cur.Status.ClusterURL {
			return fmt.Errorf("status url %q", cur.Status.URL)
		}
		return nil
	})
}

// TestImagesFollowTheOperator: a spec without images runs the operator's
// release (status.images says which); an operator upgrade rolls it to the
// new release, while a spec that pins its images keeps them.
func TestImagesFollowTheOperator(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	free, pinned := sample(ns, "free"), sample(ns, "pinned")
	free.Spec.Image, free.Spec.Browser.Image = "", ""
	pinned.Spec.Image, pinned.Spec.Browser.Image = "registry.example/server:v7", "registry.example/browser:v7"
	for _, s := range []*shutterv1.ScreenshotService{free, pinned} {
		if err := c.client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	images := func(name string) (string, string, shutterv1.Images, error) {
		api, err := get(c, ns, name+"-api", &appsv1.Deployment{})
		if err != nil {
			return "", "", shutterv1.Images{}, err
		}
		br, err := get(c, ns, name+"-browser", &appsv1.Deployment{})
		if err != nil {
			return "", "", shutterv1.Images{}, err
		}
		s, err := get(c, ns, name, &shutterv1.ScreenshotService{})
		if err != nil {
			return "", "", shutterv1.Images{}, err
		}
		return api.Spec.Template.Spec.Containers[0].Image, br.Spec.Template.Spec.Containers[0].Image, s.Status.Images, nil
	}
	expect := func(name, server, browser string) {
		eventually(t, name+" images", func() error {
			a, b, st, err := images(name)
			if err != nil {
				return err
			}
			if a != server || b != browser || st.Server != server || st.Browser != browser {
				return fmt.Errorf("api %s browser %s status %+v", a, b, st)
			}
			return nil
		})
	}
	expect("free", "ghcr.io/shutterhq/shutter-server:v0.1.0-test", "ghcr.io/shutterhq/shutter-browser:v0.1.0-test")
	expect("pinned", "registry.example/server:v7", "registry.example/browser:v7")
	if cur, _ := get(c, ns, "free", &shutterv1.ScreenshotService{}); cur.Spec.Image != "" {
		t.Errorf("the operator wrote its release into the spec: %q", cur.Spec.Image)
	}

	// The operator is upgraded: the next reconcile of each service rolls
	// what is not pinned.
	c.reconciler.SetImages(manifests.ReleaseImages("v0.2.0-test"))
	t.Cleanup(func() { c.reconciler.SetImages(manifests.ReleaseImages("v0.1.0-test")) })
	for _, name := range []string{"free", "pinned"} {
		eventually(t, "nudge "+name, func() error {
			cur, err := get(c, ns, name, &shutterv1.ScreenshotService{})
			if err != nil {
				return err
			}
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			cur.Annotations["test.shutter.dev/nudge"] = "1"
			return c.client.Update(ctx, cur)
		})
	}
	expect("free", "ghcr.io/shutterhq/shutter-server:v0.2.0-test", "ghcr.io/shutterhq/shutter-browser:v0.2.0-test")
	expect("pinned", "registry.example/server:v7", "registry.example/browser:v7")
}

// TestAutoscalerOwnsReplicas: with spec.autoscaling the operator makes the
// HPAs (accepted by the apiserver) and leaves the Deployment's replicas to
// them: a count the autoscaler sets survives reconciles. Without it, the
// HPA goes.
func TestAutoscalerOwnsReplicas(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	s := sample(ns, "shots")
	s.Spec.Autoscaling.API = &shutterv1.AutoscalingSpec{MinReplicas: 2, MaxReplicas: 6, TargetCPUUtilization: ptr.To[int32](70)}
	if err := c.client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "hpa", func() error {
		h, err := get(c, ns, "shots-api", &autoscalingv2.HorizontalPodAutoscaler{})
		if err != nil {
			return err
		}
		if h.Spec.MaxReplicas != 6 || h.Spec.ScaleTargetRef.Name != "shots-api" {
			return fmt.Errorf("hpa %+v", h.Spec)
		}
		_, err = get(c, ns, "shots-api", &appsv1.Deployment{})
		return err
	})
	// The autoscaler scales the Deployment, as the HPA controller does:
	// through its scale subresource, under its own field manager.
	d, _ := get(c, ns, "shots-api", &appsv1.Deployment{})
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if err := c.client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // several reconciles, one per change of the spec
		eventually(t, "nudge", func() error {
			cur, err := get(c, ns, "shots", &shutterv1.ScreenshotService{})
			if err != nil {
				return err
			}
			cur.Spec.MaxConcurrentScreenshots = int32(5 + i)
			return c.client.Update(ctx, cur)
		})
		eventually(t, "reconciled", func() error {
			cm, err := get(c, ns, "shots-config", &corev1.ConfigMap{})
			if err != nil {
				return err
			}
			if cm.Data["MAX_CONCURRENT_SCREENSHOTS"] != fmt.Sprint(5+i) {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		if d, _ := get(c, ns, "shots-api", &appsv1.Deployment{}); d.Spec.Replicas == nil || *d.Spec.Replicas != 5 {
			t.Fatalf("after a reconcile the autoscaler's 5 became %v", d.Spec.Replicas)
		}
	}
	updateService(t, c, ns, "shots", func(cur *shutterv1.ScreenshotService) {
		cur.Spec.Autoscaling.API = nil
	})
	eventually(t, "hpa gone, replicas back to the spec", func() error {
		if _, err := get(c, ns, "shots-api", &autoscalingv2.HorizontalPodAutoscaler{}); err == nil {
			return fmt.Errorf("the HPA is still there")
		}
		d, err := get(c, ns, "shots-api", &appsv1.Deployment{})
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != *s.Spec.Replicas {
			return fmt.Errorf("replicas %d, spec %d", *d.Spec.Replicas, *s.Spec.Replicas)
		}
		return nil
	})
}

// TestPodMonitorWhenTheCRDExists: without the Prometheus Operator's CRD a
// service asking for a PodMonitor still comes up (no hard dependency);
// once the CRD exists, the PodMonitor is made and selects the API and
// browser pods' metrics ports.
func TestPodMonitorWhenTheCRDExists(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	early := sample(ns, "early")
	early.Spec.Monitoring.PodMonitor = true
	if err := c.client.Create(ctx, early); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the service comes up without the CRD", func() error {
		_, err := get(c, ns, "early-api", &appsv1.Deployment{})
		return err
	})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "podmonitors.monitoring.coreos.com"},
		"spec": map[string]any{
			"group": "monitoring.coreos.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "PodMonitor", "listKind": "PodMonitorList", "plural": "podmonitors", "singular": "podmonitor"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if err := c.client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s := sample(ns, "shots")
	s.Spec.Monitoring = shutterv1.MonitoringSpec{PodMonitor: true, Labels: map[string]string{"release": "prometheus"}}
	if err := c.client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "PodMonitor", func() error {
		pm := &unstructured.Unstructured{}
		pm.SetGroupVersionKind(manifests.PodMonitorGVK)
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shots"}, pm); err != nil {
			return err
		}
		eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
		inst, _, _ := unstructured.NestedString(pm.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/instance")
		if len(eps) != 2 || inst != "shots" || pm.GetLabels()["release"] != "prometheus" || len(pm.GetOwnerReferences()) != 1 {
			return fmt.Errorf("PodMonitor %v", pm.Object)
		}
		return nil
	})
	updateService(t, c, ns, "shots", func(cur *shutterv1.ScreenshotService) {
		cur.Spec.Monitoring.PodMonitor = false
	})
	eventually(t, "PodMonitor gone", func() error {
		pm := &unstructured.Unstructured{}
		pm.SetGroupVersionKind(manifests.PodMonitorGVK)
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shots"}, pm); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// TestUnrelatedSecretsStayOutOfMemory: the cluster's Helm release records
// and service-account tokens never enter the operator's cache — 40 release
// records of 256 KiB leave its heap where it was — while the Secrets a
// ScreenshotService can use are there.
func TestUnrelatedSecretsStayOutOfMemory(t *testing.T) {
	c := kube(t)
	ns := namespace(t, c)
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	blob := strings.Repeat("x", 256<<10)
	for i := range 40 {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.app%d.v1", i), Namespace: ns},
			Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte(blob)}}
		if err := c.client.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-db", Namespace: ns}, Data: map[string][]byte{"url": []byte("postgres://db")}}
	if err := c.client.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the usable Secret in the cache", func() error {
		var l corev1.SecretList
		if err := c.cache.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, s := range l.Items {
			if s.Type == "helm.sh/release.v1" {
				t.Fatalf("a Helm release record is in the operator's cache: %s", s.Name)
			}
		}
		if !slices.ContainsFunc(l.Items, func(s corev1.Secret) bool { return s.Name == "other-db" }) {
			return fmt.Errorf("other-db not cached yet (%d cached)", len(l.Items))
		}
		return nil
	})
	if grew := int64(heap()) - int64(before); grew > 5<<20 {
		t.Errorf("the heap grew by %d MiB with 10 MiB of unrelated Secrets", grew>>20)
	}
}

// updateService changes a ScreenshotService, retrying on conflicts with
// the operator's status writes.
func updateService(t *testing.T, c *cluster, ns, name string, mutate func(*shutterv1.ScreenshotService)) {
	t.Helper()
	eventually(t, "update "+name, func() error {
		cur, err := get(c, ns, name, &shutterv1.ScreenshotService{})
		if err != nil {
			return err
		}
		mutate(cur)
		return c.client.Update(context.Background(), cur)
	})
}
