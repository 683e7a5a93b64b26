package manifests

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
)

func svc() *shutterv1.ScreenshotService {
	return &shutterv1.ScreenshotService{
		ObjectMeta: metav1.ObjectMeta{Name: "shots", Namespace: "web", UID: "uid-1"},
		Spec: shutterv1.ScreenshotServiceSpec{
			Database: shutterv1.DatabaseSpec{URLSecretRef: shutterv1.SecretKeyRef{Name: "db", Key: "url"}},
		},
	}
}

func TestNamesLabelsOwners(t *testing.T) {
	s := svc()
	for _, o := range []metav1.Object{ConfigMap(s), AuthSecret(s, map[string]string{AuthSecretKey: "x"}), APIDeployment(s, "h"), APIService(s),
		BrowserDeployment(s, "h"), BrowserService(s), BrowserNetworkPolicy(s), PodDisruptionBudgets(s)[0], PodDisruptionBudgets(s)[1]} {
		refs := o.GetOwnerReferences()
		if o.GetNamespace() != "web" || len(refs) != 1 || refs[0].UID != "uid-1" || refs[0].Kind != "ScreenshotService" ||
			!*refs[0].Controller || !*refs[0].BlockOwnerDeletion {
			t.Errorf("%s: namespace %q owners %+v", o.GetName(), o.GetNamespace(), refs)
		}
		l := o.GetLabels()
		if l["app.kubernetes.io/instance"] != "shots" || l["app.kubernetes.io/managed-by"] != "shutter-operator" {
			t.Errorf("%s labels %v", o.GetName(), l)
		}
	}
	if Selector(s) != "app.kubernetes.io/component=api,app.kubernetes.io/instance=shots" {
		t.Errorf("selector %q", Selector(s))
	}
	if URL(s) != "http://shots.web.svc:80" {
		t.Errorf("url %q", URL(s))
	}
}

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*shutterv1.ScreenshotService)
		want   map[string]string
		absent []string
	}{
		{"defaults", func(*shutterv1.ScreenshotService) {}, map[string]string{
			"PORT": "3000", "METRICS_PORT": "9464", "NODE_ENV": "production", "LOG_FORMAT": "json", "DATA_DIR": "/data",
			"MAX_CONCURRENT_SCREENSHOTS": "10", "SCREENSHOT_TIMEOUT": "30000", "MAX_PAGE_LOAD_TIMEOUT": "30000",
			"RATE_LIMIT_WINDOW_MS": "60000", "ALLOW_PRIVATE_TARGETS": "false", "BROWSER_URLS": "dns://shots-browser.web.svc:9222",
			"SHUTDOWN_DELAY_MS": "5000", "SHUTDOWN_GRACE_MS": "35000",
		}, []string{"STORAGE_URL", "PLAN_FREE_RATE_LIMIT", "DATABASE_POOL_MAX_CONNS"}},
		{"everything", func(s *shutterv1.ScreenshotService) {
			s.Spec.MaxConcurrentScreenshots = 4
			s.Spec.ScreenshotTimeout = &metav1.Duration{Duration: 45 * time.Second}
			s.Spec.PageLoadTimeout = &metav1.Duration{Duration: 20 * time.Second}
			s.Spec.RateLimitWindow = &metav1.Duration{Duration: 10 * time.Second}
			s.Spec.Plans.Free = shutterv1.PlanSpec{RequestsPerWindow: ptr.To[int32](3), ScreenshotsPerMonth: ptr.To[int32](0)}
			s.Spec.Plans.Enterprise.RequestsPerWindow = ptr.To[int32](999)
			s.Spec.AllowPrivateTargets = true
			s.Spec.NodeEnv, s.Spec.LogLevel = "development", "debug"
			s.Spec.Database.MaxConnections = ptr.To[int32](25)
			s.Spec.Storage = &shutterv1.StorageSpec{Bucket: "b", Endpoint: "http://minio:9000", UsePathStyle: true, CredentialsSecretName: "s3"}
		}, map[string]string{
			"MAX_CONCURRENT_SCREENSHOTS": "4", "SCREENSHOT_TIMEOUT": "45000", "MAX_PAGE_LOAD_TIMEOUT": "20000",
			"RATE_LIMIT_WINDOW_MS": "10000", "PLAN_FREE_RATE_LIMIT": "3", "PLAN_FREE_MONTHLY_QUOTA": "0",
			"PLAN_ENTERPRISE_RATE_LIMIT": "999", "ALLOW_PRIVATE_TARGETS": "true", "NODE_ENV": "development", "LOG_LEVEL": "debug",
			"DATABASE_POOL_MAX_CONNS": "25", "STORAGE_URL": "http://minio:9000", "STORAGE_BUCKET": "b", "STORAGE_REGION": "auto",
			"STORAGE_USE_PATH_STYLE_ENDPOINT": "true", "SHUTDOWN_GRACE_MS": "50000",
		}, []string{"PLAN_PRO_RATE_LIMIT", "PLAN_ENTERPRISE_MONTHLY_QUOTA"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svc()
			tc.mutate(s)
			got := Settings(s)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s set: %q", k, got[k])
				}
			}
		})
	}
}

func TestAPIDeployment(t *testing.T) {
	s := svc()
	s.Spec.Redis = &shutterv1.RedisSpec{URLSecretRef: shutterv1.SecretKeyRef{Name: "r", Key: "u"}}
	s.Spec.Storage = &shutterv1.StorageSpec{Bucket: "b", Endpoint: "http://m", CredentialsSecretName: "s3", AccessKeyIDKey: "id"}
	s.Spec.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}
	s.Spec.PodAnnotations = map[string]string{"a": "b"}
	s.Spec.NodeSelector = map[string]string{"pool": "render"}
	d := APIDeployment(s, "abc")
	if *d.Spec.Replicas != 2 || d.Spec.Template.Annotations[ConfigHashAnnotation] != "abc" || d.Spec.Template.Annotations["a"] != "b" {
		t.Errorf("deployment meta: %v %v", *d.Spec.Replicas, d.Spec.Template.Annotations)
	}
	if d.Spec.Template.Spec.NodeSelector["pool"] != "render" || *d.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Errorf("pod spec: %+v", d.Spec.Template.Spec)
	}
	c := d.Spec.Template.Spec.Containers[0]
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	want := []string{"AUTH_SECRET", "BROWSER_TOKEN", "DATABASE_URL", "REDIS_URL", "STORAGE_ACCESS_KEY_ID", "STORAGE_SECRET_ACCESS_KEY",
		"BROWSER_TOKEN_PREVIOUS", "POD_IP", "LOG_LEVEL"}
	if !slices.Equal(names, want) {
		t.Errorf("env order %v, want %v (user env last, so it wins)", names, want)
	}
	if c.Env[4].ValueFrom.SecretKeyRef.Key != "id" || c.Env[5].ValueFrom.SecretKeyRef.Key != "secretAccessKey" {
		t.Errorf("storage keys: %+v %+v", c.Env[4].ValueFrom, c.Env[5].ValueFrom)
	}
	if c.Env[1].ValueFrom.SecretKeyRef.Name != "shots-auth" || !*c.Env[6].ValueFrom.SecretKeyRef.Optional {
		t.Errorf("browser token refs: %+v %+v", c.Env[1].ValueFrom, c.Env[6].ValueFrom)
	}
	if c.EnvFrom[0].ConfigMapRef.Name != "shots-config" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	probes := map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe}
	for name, path := range map[string]string{"startup": "/health/live", "liveness": "/health/live", "readiness": "/health/ready"} {
		p := probes[name]
		if p == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.IntValue() != APIPort {
			t.Errorf("%s probe %+v", name, p)
		}
	}
	sc := c.SecurityContext
	if !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("security context %+v", sc)
	}
	if c.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("default resources %+v", c.Resources)
	}
	if c.Ports[0].ContainerPort != APIPort || c.Ports[1].ContainerPort != MetricsPort {
		t.Errorf("ports %+v", c.Ports)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	if mounts["/data"] == "" || mounts["/tmp"] == "" {
		t.Errorf("mounts %v", mounts)
	}
	if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g < 35 {
		t.Errorf("grace %ds does not cover the shutdown delay and a render", g)
	}
}

func TestBrowser(t *testing.T) {
	s := svc()
	s.Spec.Browser = shutterv1.BrowserSpec{Replicas: ptr.To[int32](3), ExtraArgs: []string{"--lang=de"}, ShmSize: ptr.To(resource.MustParse("2Gi"))}
	d := BrowserDeployment(s, "h")
	c := d.Spec.Template.Spec.Containers[0]
	// The supervisor runs Chromium; DevTools never listens on the pod's
	// interfaces itself.
	if *d.Spec.Replicas != 3 || c.Args[0] != "browser" || c.Args[len(c.Args)-1] != "--lang=de" || !slices.Contains(c.Args, "--headless") ||
		slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--remote-debugging") }) {
		t.Errorf("browser: replicas %d args %v", *d.Spec.Replicas, c.Args)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Port.IntValue() != DevToolsPort {
		t.Errorf("probes %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	var token bool
	for _, e := range c.Env {
		token = token || (e.Name == "BROWSER_TOKEN" && e.ValueFrom.SecretKeyRef.Name == "shots-auth" && e.ValueFrom.SecretKeyRef.Key == "BROWSER_TOKEN")
	}
	// Rolling browsers lose no render: a new pod before an old one goes, the
	// old one outlives the API's discovery interval, then drains.
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v", d.Spec.Strategy)
	}
	pre := c.Lifecycle.PreStop.Sleep.Seconds
	grace := *d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if pre < 10 || grace < pre+30 {
		t.Errorf("preStop %ds, grace %ds: must outlast discovery (10 s) and a render (30 s)", pre, grace)
	}
	var drain bool
	for _, e := range c.Env {
		drain = drain || (e.Name == "SHUTDOWN_GRACE_MS" && e.Value == "35000")
	}
	if !drain {
		t.Errorf("the supervisor's drain time is not the render timeout and a margin: %+v", c.Env)
	}
	if !token || d.Spec.Template.Annotations[ConfigHashAnnotation] != "h" {
		t.Errorf("browser token env %+v, annotations %v", c.Env, d.Spec.Template.Annotations)
	}
	shm := d.Spec.Template.Spec.Volumes[0]
	if shm.EmptyDir.Medium != corev1.StorageMediumMemory || shm.EmptyDir.SizeLimit.String() != "2Gi" {
		t.Errorf("shm %+v", shm)
	}
	svc := BrowserService(s)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Ports[0].Port != DevToolsPort {
		t.Errorf("service %+v", svc.Spec)
	}
	np := BrowserNetworkPolicy(s)
	from := np.Spec.Ingress[0].From[0].PodSelector.MatchLabels
	if from["app.kubernetes.io/component"] != "api" || np.Spec.Ingress[0].Ports[0].Port.IntValue() != DevToolsPort {
		t.Errorf("ingress %+v", np.Spec.Ingress)
	}
	if np.Spec.Egress[0].To[0].PodSelector.MatchLabels["app.kubernetes.io/component"] != "api" {
		t.Errorf("browsers cannot reach the API pods' proxies: %+v", np.Spec.Egress[0])
	}
}

func TestHash(t *testing.T) {
	a := Hash(map[string]string{"A": "1", "B": "2"}, map[string]string{"S": "x"})
	if a != Hash(map[string]string{"B": "2", "A": "1"}, map[string]string{"S": "x"}) {
		t.Error("hash depends on map order")
	}
	if a == Hash(map[string]string{"A": "1", "B": "2"}, map[string]string{"S": "y"}) {
		t.Error("hash ignores a secret change")
	}
	if strings.Contains(a, "x") && len(a) != 16 {
		t.Errorf("hash %q", a)
	}
}

// TestBrowserEgressOnlyToTheProxies: while the API proxies the browsers'
// traffic, their egress is the API pods and DNS, nothing else — so no
// address of the refused table (nor any other) is reachable directly.
// Without the proxy (allowPrivateTargets) the egress is open, as the
// browsers then connect themselves; ALLOWED_TARGETS_ONLY brings the proxy
// back, and the wall with it.
func TestBrowserEgressOnlyToTheProxies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*shutterv1.ScreenshotService)
		proxied bool
	}{
		{"default", func(*shutterv1.ScreenshotService) {}, true},
		{"allowPrivateTargets", func(s *shutterv1.ScreenshotService) { s.Spec.AllowPrivateTargets = true }, false},
		{"allow-list only", func(s *shutterv1.ScreenshotService) {
			s.Spec.AllowPrivateTargets = true
			s.Spec.Env = []corev1.EnvVar{{Name: "ALLOWED_TARGETS_ONLY", Value: "true"}, {Name: "ALLOWED_PRIVATE_TARGETS", Value: "10.1.2.3"}}
		}, true},
	} {
		s := svc()
		tc.mutate(s)
		np := BrowserNetworkPolicy(s)
		hasEgress := slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		if hasEgress != tc.proxied || Proxied(s) != tc.proxied {
			t.Errorf("%s: egress policed %v, proxied %v; want %v", tc.name, hasEgress, Proxied(s), tc.proxied)
			continue
		}
		if !tc.proxied {
			continue
		}
		if len(np.Spec.Egress) != 2 {
			t.Fatalf("%s: egress rules %+v", tc.name, np.Spec.Egress)
		}
		for _, rule := range np.Spec.Egress {
			for _, peer := range rule.To {
				if peer.IPBlock != nil {
					t.Errorf("%s: an address block is reachable: %+v", tc.name, peer.IPBlock)
				}
			}
		}
		dns := np.Spec.Egress[1]
		if dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" || dns.Ports[0].Port.IntValue() != 53 {
			t.Errorf("%s: DNS rule %+v", tc.name, dns)
		}
	}
}

// TestAPINetworkPolicy: the HTTP port is open to all (or to apiFrom), the
// metrics port only to the monitoring namespace (or metricsFrom), and
// every other port (the per-render proxies) only to the browser pods.
func TestAPINetworkPolicy(t *testing.T) {
	s := svc()
	np := APINetworkPolicy(s)
	if np.Name != "shots-api" || np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] != "api" {
		t.Fatalf("policy %s selects %v", np.Name, np.Spec.PodSelector.MatchLabels)
	}
	rules := np.Spec.Ingress
	if len(rules) != 3 {
		t.Fatalf("ingress = %+v", rules)
	}
	if len(rules[0].From) != 0 || len(rules[0].Ports) != 1 || rules[0].Ports[0].Port.IntVal != APIPort {
		t.Errorf("HTTP rule %+v", rules[0])
	}
	if len(rules[1].From) != 1 || rules[1].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" ||
		rules[1].From[0].PodSelector != nil || rules[1].Ports[0].Port.IntVal != MetricsPort {
		t.Errorf("metrics rule %+v", rules[1])
	}
	b := rules[2]
	if len(b.From) != 1 || b.From[0].PodSelector.MatchLabels["app.kubernetes.io/component"] != "browser" || b.From[0].NamespaceSelector != nil ||
		b.Ports[0].EndPort == nil || *b.Ports[0].EndPort != 65535 {
		t.Errorf("proxy rule %+v", b)
	}
	prom := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "observability"}}}
	lb := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/24"}}
	s.Spec.Network = shutterv1.NetworkSpec{APIFrom: []networkingv1.NetworkPolicyPeer{lb}, MetricsFrom: []networkingv1.NetworkPolicyPeer{prom}}
	rules = APINetworkPolicy(s).Spec.Ingress
	if rules[0].From[0].IPBlock.CIDR != "10.0.0.0/24" || rules[1].From[0].NamespaceSelector.MatchLabels["team"] != "observability" {
		t.Errorf("configured peers: %+v", rules)
	}
}

// TestIngressAndURL: spec.ingress renders an Ingress to the API Service,
// with TLS when a secret is named, and status.url becomes its address.
func TestIngressAndURL(t *testing.T) {
	s := svc()
	if Ingress(s) != nil || URL(s) != ClusterURL(s) || URL(s) != "http://shots.web.svc:80" {
		t.Fatalf("without spec.ingress: %v %s", Ingress(s), URL(s))
	}
	s.Spec.Ingress = &shutterv1.IngressSpec{ClassName: "nginx", Host: "shots.example.com", TLSSecretName: "shots-tls",
		Annotations: map[string]string{"cert-manager.io/cluster-issuer": "letsencrypt"}}
	ing := Ingress(s)
	rule := ing.Spec.Rules[0]
	backend := rule.HTTP.Paths[0].Backend.Service
	if ing.Name != "shots" || *ing.Spec.IngressClassName != "nginx" || rule.Host != "shots.example.com" || backend.Name != "shots" ||
		backend.Port.Number != 80 || ing.Spec.TLS[0].SecretName != "shots-tls" || ing.Annotations["cert-manager.io/cluster-issuer"] != "letsencrypt" ||
		ing.OwnerReferences[0].Kind != "ScreenshotService" {
		t.Errorf("ingress %+v", ing)
	}
	if URL(s) != "https://shots.example.com" {
		t.Errorf("URL with TLS = %s", URL(s))
	}
	s.Spec.Ingress.TLSSecretName = ""
	if URL(s) != "http://shots.example.com" || Ingress(s).Spec.TLS != nil {
		t.Errorf("URL without TLS = %s", URL(s))
	}
}

// TestSpreadAndScheduling: both pod kinds spread over nodes and zones by
// default without ever blocking; the browsers have scheduling of their own.
func TestSpreadAndScheduling(t *testing.T) {
	s := svc()
	s.Spec.NodeSelector = map[string]string{"pool": "general"}
	for _, tc := range []struct {
		component string
		spec      corev1.PodSpec
	}{{"api", APIDeployment(s, "h").Spec.Template.Spec}, {"browser", BrowserDeployment(s, "h").Spec.Template.Spec}} {
		c := tc.spec.TopologySpreadConstraints
		if len(c) != 2 || c[0].TopologyKey != "kubernetes.io/hostname" || c[1].TopologyKey != "topology.kubernetes.io/zone" ||
			c[0].WhenUnsatisfiable != corev1.ScheduleAnyway || c[0].LabelSelector.MatchLabels["app.kubernetes.io/component"] != tc.component {
			t.Errorf("%s spread %+v", tc.component, c)
		}
		if tc.spec.NodeSelector["pool"] != "general" {
			t.Errorf("%s node selector %v", tc.component, tc.spec.NodeSelector)
		}
	}
	s.Spec.Browser.NodeSelector = map[string]string{"pool": "browsers"}
	s.Spec.Browser.Tolerations = []corev1.Toleration{{Key: "browsers", Operator: corev1.TolerationOpExists}}
	s.Spec.Browser.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "rack", WhenUnsatisfiable: corev1.DoNotSchedule}}
	b, a := BrowserDeployment(s, "h").Spec.Template.Spec, APIDeployment(s, "h").Spec.Template.Spec
	if b.NodeSelector["pool"] != "browsers" || len(b.Tolerations) != 1 || b.TopologySpreadConstraints[0].TopologyKey != "rack" {
		t.Errorf("browser scheduling %+v", b)
	}
	if a.NodeSelector["pool"] != "general" || len(a.Tolerations) != 0 || a.TopologySpreadConstraints[0].TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("the API took the browsers' scheduling: %+v", a)
	}
}

// TestMetricsOnlyOnTheirOwnService: the API Service (which may be a
// LoadBalancer) carries the HTTP port alone; a headless Service carries
// the metrics.
func TestMetricsOnlyOnTheirOwnService(t *testing.T) {
	s := svc()
	s.Spec.Service.Type = corev1.ServiceTypeLoadBalancer
	api := APIService(s)
	if len(api.Spec.Ports) != 1 || api.Spec.Ports[0].Name != "http" {
		t.Errorf("API Service ports %+v", api.Spec.Ports)
	}
	m := MetricsService(s)
	if m.Spec.ClusterIP != corev1.ClusterIPNone || len(m.Spec.Ports) != 1 || m.Spec.Ports[0].Port != MetricsPort || m.Spec.Type != "" {
		t.Errorf("metrics Service %+v", m.Spec)
	}
}

// TestAutoscalers: spec.autoscaling renders an HPA per pod kind with the
// asked metrics, and its Deployment carries no replica count (so that
// server-side apply leaves the autoscaler's figure alone).
func TestAutoscalers(t *testing.T) {
	s := svc()
	if want, drop := Autoscalers(s); len(want) != 0 || len(drop) != 2 {
		t.Fatalf("without autoscaling: %v %v", want, drop)
	}
	if APIDeployment(s, "h").Spec.Replicas == nil {
		t.Fatal("a Deployment without an autoscaler lacks replicas")
	}
	busy := resource.MustParse("6")
	s.Spec.Autoscaling.API = &shutterv1.AutoscalingSpec{MinReplicas: 2, MaxReplicas: 8, TargetCPUUtilization: ptr.To[int32](70), TargetBusyPerPod: &busy}
	want, drop := Autoscalers(s)
	if len(want) != 1 || len(drop) != 1 || drop[0] != "shots-browser" {
		t.Fatalf("api only: %v %v", want, drop)
	}
	h := want[0]
	if h.Name != "shots-api" || h.Spec.ScaleTargetRef.Name != "shots-api" || h.Spec.ScaleTargetRef.Kind != "Deployment" ||
		*h.Spec.MinReplicas != 2 || h.Spec.MaxReplicas != 8 || len(h.Spec.Metrics) != 2 {
		t.Fatalf("hpa %+v", h.Spec)
	}
	if m := h.Spec.Metrics[0]; m.Resource.Name != corev1.ResourceCPU || *m.Resource.Target.AverageUtilization != 70 {
		t.Errorf("cpu metric %+v", m)
	}
	if m := h.Spec.Metrics[1]; m.Pods.Metric.Name != "shutter_queue_active" || m.Pods.Target.AverageValue.String() != "6" {
		t.Errorf("busy metric %+v", m)
	}
	if APIDeployment(s, "h").Spec.Replicas != nil {
		t.Error("an autoscaled Deployment still carries replicas")
	}
	if BrowserDeployment(s, "h").Spec.Replicas == nil {
		t.Error("the browsers lost their count with the API's autoscaler")
	}
}
