// Package manifests builds the Kubernetes objects of a ScreenshotService:
// pure functions, spec in and objects out, so that every detail can be
// tested without a cluster. The reconciler only applies what they return.
package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
)

// Ports and paths the objects agree on.
const (
	APIPort      = 3000
	MetricsPort  = 9464
	DevToolsPort = 9222
	DataDir      = "/data"

	// ConfigHashAnnotation on the API pod template changes whenever the
	// settings or the referenced Secrets change, which rolls the pods.
	ConfigHashAnnotation = "shutter.dev/config-hash"
	// AuthSecretKey is the key of the generated Secret.
	AuthSecretKey = "AUTH_SECRET"
	// BrowserTokenKey and BrowserTokenPreviousKey hold the token that the
	// API presents to the browser supervisors, and during a rotation the
	// one before it (accepted by both sides until every pod has rolled).
	BrowserTokenKey         = "BROWSER_TOKEN"
	BrowserTokenPreviousKey = "BROWSER_TOKEN_PREVIOUS" //nolint:gosec // a key name, not a credential
	// RotateBrowserTokenAnnotation on a ScreenshotService asks for a new
	// browser token: each new value rotates once.
	RotateBrowserTokenAnnotation = "shutter.dev/rotate-browser-token" //nolint:gosec // an annotation name
	// BrowserPreStop is how long a leaving browser pod keeps serving before
	// its supervisor drains: longer than the API's discovery interval
	// (10 s).
	BrowserPreStop = 15 * time.Second
	// RotatedForAnnotation on the generated Secret records the rotation
	// request it answered.
	RotatedForAnnotation = "shutter.dev/rotated-for"

	nonRootUID = 65532
)

// Names of the objects of a ScreenshotService.
func APIName(s *shutterv1.ScreenshotService) string        { return s.Name + "-api" }
func ServiceName(s *shutterv1.ScreenshotService) string    { return s.Name }
func BrowserName(s *shutterv1.ScreenshotService) string    { return s.Name + "-browser" }
func ConfigMapName(s *shutterv1.ScreenshotService) string  { return s.Name + "-config" }
func AuthSecretName(s *shutterv1.ScreenshotService) string { return s.Name + "-auth" }

// Labels of a component's objects; the selector uses the same.
func Labels(s *shutterv1.ScreenshotService, component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "shutter",
		"app.kubernetes.io/instance":   s.Name,
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/managed-by": "shutter-operator",
	}
}

func selector(s *shutterv1.ScreenshotService, component string) map[string]string {
	return map[string]string{"app.kubernetes.io/instance": s.Name, "app.kubernetes.io/component": component}
}

// Selector is the API pods' label selector as a string (for the scale
// subresource).
func Selector(s *shutterv1.ScreenshotService) string {
	sel := selector(s, "api")
	keys := slices.Sorted(maps.Keys(sel))
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ","
		}
		out += k + "=" + sel[k]
	}
	return out
}

func meta(s *shutterv1.ScreenshotService, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: s.Namespace, Labels: Labels(s, component),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, shutterv1.GroupVersion.WithKind("ScreenshotService"))},
	}
}

// Repository is where the release images are.
const Repository = "ghcr.io/shutterhq/"

// ReleaseImages are the images of a release tag.
func ReleaseImages(tag string) shutterv1.Images {
	return shutterv1.Images{Server: Repository + "shutter-server:" + tag, Browser: Repository + "shutter-browser:" + tag}
}

// WithImages returns a copy of s whose empty image fields hold the
// release images; what the spec pins stays.
func WithImages(s *shutterv1.ScreenshotService, release shutterv1.Images) *shutterv1.ScreenshotService {
	c := s.DeepCopy()
	c.Spec.Image = orDefault(c.Spec.Image, release.Server)
	c.Spec.Browser.Image = orDefault(c.Spec.Browser.Image, release.Browser)
	return c
}

// ClusterURL is the in-cluster address of the API.
func ClusterURL(s *shutterv1.ScreenshotService) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", ServiceName(s), s.Namespace, port(s))
}

// URL is the address of the API: the external one when an Ingress
// publishes it, else the in-cluster one.
func URL(s *shutterv1.ScreenshotService) string {
	if in := s.Spec.Ingress; in != nil {
		if in.TLSSecretName != "" {
			return "https://" + in.Host
		}
		return "http://" + in.Host
	}
	return ClusterURL(s)
}

func port(s *shutterv1.ScreenshotService) int32 {
	if s.Spec.Service.Port > 0 {
		return s.Spec.Service.Port
	}
	return 80
}

// AuthSecret is the generated Secret (AUTH_SECRET, BROWSER_TOKEN and,
// after a rotation, BROWSER_TOKEN_PREVIOUS); the values are made by the
// caller and never changed by a reconcile, only by a rotation.
func AuthSecret(s *shutterv1.ScreenshotService, values map[string]string) *corev1.Secret {
	sec := &corev1.Secret{
		ObjectMeta: meta(s, AuthSecretName(s), "api"),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{},
	}
	for k, v := range values {
		sec.Data[k] = []byte(v)
	}
	return sec
}

func screenshotTimeout(s *shutterv1.ScreenshotService) time.Duration {
	if t := s.Spec.ScreenshotTimeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return 30 * time.Second
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Settings are the non-secret settings of the API server.
func Settings(s *shutterv1.ScreenshotService) map[string]string {
	sp := s.Spec
	timeout := screenshotTimeout(s)
	window := time.Minute
	if sp.RateLimitWindow != nil {
		window = sp.RateLimitWindow.Duration
	}
	d := map[string]string{
		"PORT":                       strconv.Itoa(APIPort),
		"METRICS_PORT":               strconv.Itoa(MetricsPort),
		"NODE_ENV":                   orDefault(sp.NodeEnv, "production"),
		"LOG_LEVEL":                  orDefault(sp.LogLevel, "info"),
		"LOG_FORMAT":                 "json",
		"DATA_DIR":                   DataDir,
		"MAX_CONCURRENT_SCREENSHOTS": strconv.Itoa(int(max(sp.MaxConcurrentScreenshots, 1))),
		"SCREENSHOT_TIMEOUT":         ms(timeout),
		"MAX_PAGE_LOAD_TIMEOUT":      ms(timeout),
		"RATE_LIMIT_WINDOW_MS":       ms(window),
		"ALLOW_PRIVATE_TARGETS":      strconv.FormatBool(sp.AllowPrivateTargets),
		"BROWSER_URLS":               fmt.Sprintf("dns://%s.%s.svc:%d", BrowserName(s), s.Namespace, DevToolsPort),
		"SHUTDOWN_DELAY_MS":          "5000",
		"SHUTDOWN_GRACE_MS":          ms(timeout + 5*time.Second),
	}
	if sp.MaxConcurrentScreenshots == 0 {
		d["MAX_CONCURRENT_SCREENSHOTS"] = "10"
	}
	if sp.PageLoadTimeout != nil {
		d["MAX_PAGE_LOAD_TIMEOUT"] = ms(sp.PageLoadTimeout.Duration)
	}
	plan := func(prefix string, p shutterv1.PlanSpec) {
		if p.RequestsPerWindow != nil {
			d["PLAN_"+prefix+"_RATE_LIMIT"] = strconv.Itoa(int(*p.RequestsPerWindow))
		}
		if p.ScreenshotsPerMonth != nil {
			d["PLAN_"+prefix+"_MONTHLY_QUOTA"] = strconv.Itoa(int(*p.ScreenshotsPerMonth))
		}
	}
	plan("FREE", sp.Plans.Free)
	plan("PRO", sp.Plans.Pro)
	plan("ENTERPRISE", sp.Plans.Enterprise)
	if sp.Database.MaxConnections != nil {
		d["DATABASE_POOL_MAX_CONNS"] = strconv.Itoa(int(*sp.Database.MaxConnections))
	}
	if st := sp.Storage; st != nil {
		d["STORAGE_URL"] = st.Endpoint
		d["STORAGE_BUCKET"] = st.Bucket
		d["STORAGE_REGION"] = orDefault(st.Region, "auto")
		d["STORAGE_USE_PATH_STYLE_ENDPOINT"] = strconv.FormatBool(st.UsePathStyle)
	}
	return d
}

// ConfigMap holds Settings.
func ConfigMap(s *shutterv1.ScreenshotService) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: meta(s, ConfigMapName(s), "api"), Data: Settings(s)}
}

// Hash is a stable digest of settings and secret values, for the
// ConfigHashAnnotation. Values are hashed, never stored.
func Hash(parts ...map[string]string) string {
	h := sha256.New()
	for _, p := range parts {
		for _, k := range slices.Sorted(maps.Keys(p)) {
			fmt.Fprintf(h, "%s=%q;", k, p[k])
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// previousTokenEnv is BROWSER_TOKEN_PREVIOUS, present only after a
// rotation.
func previousTokenEnv(s *shutterv1.ScreenshotService) corev1.EnvVar {
	e := secretEnv(BrowserTokenPreviousKey, shutterv1.SecretKeyRef{Name: AuthSecretName(s), Key: BrowserTokenPreviousKey})
	e.ValueFrom.SecretKeyRef.Optional = ptr.To(true)
	return e
}

func secretEnv(name string, ref shutterv1.SecretKeyRef) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key}}}
}

// SecretRefs are the referenced Secret keys by the variable they feed.
func SecretRefs(s *shutterv1.ScreenshotService) map[string]shutterv1.SecretKeyRef {
	refs := map[string]shutterv1.SecretKeyRef{
		AuthSecretKey:   {Name: AuthSecretName(s), Key: AuthSecretKey},
		BrowserTokenKey: {Name: AuthSecretName(s), Key: BrowserTokenKey},
		"DATABASE_URL":  s.Spec.Database.URLSecretRef,
	}
	if r := s.Spec.Redis; r != nil {
		refs["REDIS_URL"] = r.URLSecretRef
	}
	if st := s.Spec.Storage; st != nil {
		refs["STORAGE_ACCESS_KEY_ID"] = shutterv1.SecretKeyRef{Name: st.CredentialsSecretName, Key: orDefault(st.AccessKeyIDKey, "accessKeyId")}
		refs["STORAGE_SECRET_ACCESS_KEY"] = shutterv1.SecretKeyRef{Name: st.CredentialsSecretName, Key: orDefault(st.SecretAccessKeyKey, "secretAccessKey")}
	}
	return refs
}

func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](nonRootUID),
		RunAsGroup:               ptr.To[int64](nonRootUID),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func podAnnotations(s *shutterv1.ScreenshotService, extra map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, s.Spec.PodAnnotations)
	maps.Copy(out, extra)
	return out
}

func httpProbe(path string, port int, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}}, //nolint:gosec // our own port constants
		PeriodSeconds:    period,
		TimeoutSeconds:   3,
		FailureThreshold: failures,
	}
}

func orResources(r corev1.ResourceRequirements, cpu, mem, memLimit string) corev1.ResourceRequirements {
	if len(r.Requests) > 0 || len(r.Limits) > 0 {
		return r
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memLimit)},
	}
}

// APIDeployment runs the API server.
func APIDeployment(s *shutterv1.ScreenshotService, configHash string) *appsv1.Deployment {
	env := []corev1.EnvVar{}
	refs := SecretRefs(s)
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		env = append(env, secretEnv(name, refs[name]))
	}
	env = append(env, previousTokenEnv(s))
	// The per-render proxies listen on the pod's address for the browsers.
	env = append(env, corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	env = append(env, s.Spec.Env...) // later entries win
	timeout := screenshotTimeout(s)
	grace := int64((5*time.Second + 2*timeout + 10*time.Second) / time.Second)
	c := corev1.Container{
		Name:            "api",
		Image:           s.Spec.Image,
		ImagePullPolicy: s.Spec.ImagePullPolicy,
		Args:            []string{"serve"},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: APIPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(s)}}}},
		Env:       env,
		Resources: orResources(s.Spec.Resources, "100m", "128Mi", "512Mi"),
		// The server listens only after migrations and the first browser
		// connection: give it a minute.
		StartupProbe:    httpProbe("/health/live", APIPort, 2, 30),
		LivenessProbe:   httpProbe("/health/live", APIPort, 10, 3),
		ReadinessProbe:  httpProbe("/health/ready", APIPort, 5, 2),
		SecurityContext: restricted(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: DataDir},
			{Name: "tmp", MountPath: "/tmp"},
		},
	}
	return &appsv1.Deployment{
		ObjectMeta: meta(s, APIName(s), "api"),
		Spec: appsv1.DeploymentSpec{
			Replicas: replicas(s.Spec.Replicas, s.Spec.Autoscaling.API),
			Selector: &metav1.LabelSelector{MatchLabels: selector(s, "api")},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(s, "api"),
					Annotations: podAnnotations(s, map[string]string{ConfigHashAnnotation: configHash})},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{c},
					TerminationGracePeriodSeconds: ptr.To(grace),
					SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](nonRootUID)},
					AutomountServiceAccountToken:  ptr.To(false),
					Volumes: []corev1.Volume{
						{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
					NodeSelector:              s.Spec.NodeSelector,
					Tolerations:               s.Spec.Tolerations,
					Affinity:                  s.Spec.Affinity,
					TopologySpreadConstraints: spread(s, "api", s.Spec.TopologySpreadConstraints),
				},
			},
		},
	}
}

// APIService exposes the API: its HTTP port only, so that a LoadBalancer
// type never publishes the metrics.
func APIService(s *shutterv1.ScreenshotService) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(s, ServiceName(s), "api"),
		Spec: corev1.ServiceSpec{
			Type:     orDefault(s.Spec.Service.Type, corev1.ServiceTypeClusterIP),
			Selector: selector(s, "api"),
			Ports:    []corev1.ServicePort{{Name: "http", Port: port(s), TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// MetricsServiceName is the headless Service of the API pods' metrics.
func MetricsServiceName(s *shutterv1.ScreenshotService) string { return s.Name + "-metrics" }

// MetricsService is a headless Service over the API pods' metrics port,
// for Prometheus to discover (a ServiceMonitor or plain endpoints
// discovery); nothing routes to it from outside the cluster.
func MetricsService(s *shutterv1.ScreenshotService) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(s, MetricsServiceName(s), "api"),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  selector(s, "api"),
			Ports:     []corev1.ServicePort{{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// BrowserArgs are the browser container's arguments: the supervisor
// (`server browser`, the image's entrypoint runs /server) and Chromium's
// flags after it. The supervisor runs Chromium with DevTools on loopback
// and a fresh profile in /tmp, and serves the pod's port to holders of the
// browser token only; no background traffic, no UDP outside a proxy.
func BrowserArgs(s *shutterv1.ScreenshotService) []string {
	args := []string{
		"browser",
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-quic", "--disable-breakpad",
		"--js-flags=--max-old-space-size=512",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
	}
	return append(args, s.Spec.Browser.ExtraArgs...)
}

// BrowserDeployment runs headless Chromium pods.
func BrowserDeployment(s *shutterv1.ScreenshotService, tokenHash string) *appsv1.Deployment {
	b := s.Spec.Browser
	// A leaving browser pod first waits out the API's discovery interval
	// (it is out of the headless Service at once; the API notices within
	// the interval and stops sending it renders), then the supervisor
	// drains on SIGTERM: the renders in flight finish.
	timeout := screenshotTimeout(s)
	drain := timeout + 5*time.Second
	grace := int64((BrowserPreStop + drain + 10*time.Second) / time.Second)
	shm := resource.MustParse("1Gi")
	if b.ShmSize != nil {
		shm = *b.ShmSize
	}
	c := corev1.Container{
		Name:            "chromium",
		Image:           b.Image,
		ImagePullPolicy: b.ImagePullPolicy,
		Args:            BrowserArgs(s),
		Env: []corev1.EnvVar{{Name: "HOME", Value: "/tmp"},
			{Name: "SHUTDOWN_GRACE_MS", Value: strconv.FormatInt(drain.Milliseconds(), 10)},
			secretEnv(BrowserTokenKey, shutterv1.SecretKeyRef{Name: AuthSecretName(s), Key: BrowserTokenKey}), previousTokenEnv(s)},
		Ports:          []corev1.ContainerPort{{Name: "devtools", ContainerPort: DevToolsPort, Protocol: corev1.ProtocolTCP}},
		Resources:      orResources(b.Resources, "250m", "512Mi", "2Gi"),
		ReadinessProbe: httpProbe("/readyz", DevToolsPort, 5, 2),
		LivenessProbe:  httpProbe("/healthz", DevToolsPort, 10, 3),
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Sleep: &corev1.SleepAction{Seconds: int64(BrowserPreStop / time.Second)}}},
		SecurityContext: restricted(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "dshm", MountPath: "/dev/shm"},
			{Name: "tmp", MountPath: "/tmp"},
		},
	}
	return &appsv1.Deployment{
		ObjectMeta: meta(s, BrowserName(s), "browser"),
		Spec: appsv1.DeploymentSpec{
			Replicas: replicas(b.Replicas, s.Spec.Autoscaling.Browser),
			// A new browser is up before an old one leaves.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}},
			Selector: &metav1.LabelSelector{MatchLabels: selector(s, "browser")},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(s, "browser"), Annotations: podAnnotations(s, map[string]string{ConfigHashAnnotation: tokenHash})},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{c},
					TerminationGracePeriodSeconds: ptr.To(grace),
					SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](nonRootUID)},
					AutomountServiceAccountToken:  ptr.To(false),
					Volumes: []corev1.Volume{
						{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
					NodeSelector:              orMap(s.Spec.Browser.NodeSelector, s.Spec.NodeSelector),
					Tolerations:               orSlice(s.Spec.Browser.Tolerations, s.Spec.Tolerations),
					Affinity:                  orPtr(s.Spec.Browser.Affinity, s.Spec.Affinity),
					TopologySpreadConstraints: spread(s, "browser", s.Spec.Browser.TopologySpreadConstraints),
				},
			},
		},
	}
}

// BrowserService is the headless Service through which the API pods find
// every browser pod.
func BrowserService(s *shutterv1.ScreenshotService) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(s, BrowserName(s), "browser"),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: false,
			Selector:                 selector(s, "browser"),
			Ports:                    []corev1.ServicePort{{Name: "devtools", Port: DevToolsPort, TargetPort: intstr.FromString("devtools"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// BrowserNetworkPolicy admits DevTools connections from the API pods only.
// Egress: while the API sends the browsers' traffic through its per-render
// proxies (the default, and with an allow-list of private targets), the
// browsers need nothing but those proxies on the API pods, and DNS; they
// never reach the internet themselves. With allowPrivateTargets (and no
// ALLOWED_TARGETS_ONLY) there is no proxy: the browsers connect directly,
// so their egress is open.
func BrowserNetworkPolicy(s *shutterv1.ScreenshotService) *networkingv1.NetworkPolicy {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	dns := intstr.FromInt32(53)
	devtools := intstr.FromInt32(DevToolsPort)
	p := &networkingv1.NetworkPolicy{
		ObjectMeta: meta(s, BrowserName(s), "browser"),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selector(s, "browser")},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: selector(s, "api")}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &devtools}},
			}},
		},
	}
	if !Proxied(s) {
		return p
	}
	p.Spec.PolicyTypes = append(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
		// The API pods' per-render proxies, through which pages load.
		{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: selector(s, "api")}}}},
		{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
		},
	}
	return p
}

// Proxied reports whether the API sends the browsers' traffic through its
// per-render proxies: unless private targets are allowed wholesale (as the
// server decides from ALLOW_PRIVATE_TARGETS and ALLOWED_TARGETS_ONLY).
func Proxied(s *shutterv1.ScreenshotService) bool {
	targetsOnly := false
	for _, e := range s.Spec.Env {
		if e.Name == "ALLOWED_TARGETS_ONLY" && (strings.EqualFold(e.Value, "true") || e.Value == "1") {
			targetsOnly = true
		}
	}
	return !s.Spec.AllowPrivateTargets || targetsOnly
}

// MonitoringNamespace is where metrics may be scraped from when
// spec.network.metricsFrom is empty.
const MonitoringNamespace = "monitoring"

// APINetworkPolicy admits the HTTP port from spec.network.apiFrom (empty:
// anyone), the metrics port from spec.network.metricsFrom (empty: the
// monitoring namespace), and the rest — the per-render proxies, which
// listen on ephemeral ports of the pod's address — from the browser pods
// only.
func APINetworkPolicy(s *shutterv1.ScreenshotService) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	api, metrics := intstr.FromInt32(APIPort), intstr.FromInt32(MetricsPort)
	low, high := intstr.FromInt32(1024), int32(65535)
	metricsFrom := s.Spec.Network.MetricsFrom
	if len(metricsFrom) == 0 {
		metricsFrom = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": MonitoringNamespace}}}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: meta(s, APIName(s), "api"),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selector(s, "api")},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: s.Spec.Network.APIFrom, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &api}}},
				{From: metricsFrom, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &metrics}}},
				{
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: selector(s, "browser")}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &low, EndPort: &high}},
				},
			},
		},
	}
}

// replicas is a Deployment's count: none while an autoscaler owns it, so
// that server-side apply leaves the autoscaler's figure alone.
func replicas(spec *int32, auto *shutterv1.AutoscalingSpec) *int32 {
	if auto != nil {
		return nil
	}
	return ptr.To(ptr.Deref(spec, 2))
}

// BusyMetric is the per-pod metric of busy render slots of each pod kind,
// for a metrics adapter to serve to the autoscalers.
var BusyMetric = map[string]string{"api": "shutter_queue_active", "browser": "shutter_browser_busy_pages"}

// Autoscalers are the HorizontalPodAutoscalers spec.autoscaling asks for,
// and the names of those it does not (to remove).
func Autoscalers(s *shutterv1.ScreenshotService) (want []*autoscalingv2.HorizontalPodAutoscaler, drop []string) {
	for _, c := range []struct {
		name, component string
		spec            *shutterv1.AutoscalingSpec
	}{{APIName(s), "api", s.Spec.Autoscaling.API}, {BrowserName(s), "browser", s.Spec.Autoscaling.Browser}} {
		if c.spec == nil {
			drop = append(drop, c.name)
			continue
		}
		h := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: meta(s, c.name, c.component),
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: c.name},
				MinReplicas:    ptr.To(c.spec.MinReplicas),
				MaxReplicas:    c.spec.MaxReplicas,
			},
		}
		if u := c.spec.TargetCPUUtilization; u != nil {
			h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: u}}})
		}
		if b := c.spec.TargetBusyPerPod; b != nil {
			h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType,
				Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: BusyMetric[c.component]},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: b}}})
		}
		want = append(want, h)
	}
	return want, drop
}

// PodMonitorGVK is the Prometheus Operator's PodMonitor kind.
var PodMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// PodMonitor has Prometheus scrape the API pods' metrics port and the
// browser supervisors' /metrics (an unstructured object: the Prometheus
// Operator is no dependency of ours). nil without spec.monitoring.podMonitor.
func PodMonitor(s *shutterv1.ScreenshotService) *unstructured.Unstructured {
	if !s.Spec.Monitoring.PodMonitor {
		return nil
	}
	m := meta(s, s.Name, "monitoring")
	labels := map[string]any{}
	for k, v := range m.Labels {
		labels[k] = v
	}
	for k, v := range s.Spec.Monitoring.Labels {
		labels[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": m.Name, "namespace": m.Namespace, "labels": labels},
		"spec": map[string]any{
			"selector": map[string]any{"matchExpressions": []any{map[string]any{
				"key": "app.kubernetes.io/component", "operator": "In", "values": []any{"api", "browser"}}},
				"matchLabels": map[string]any{"app.kubernetes.io/name": "shutter", "app.kubernetes.io/instance": s.Name}},
			"podMetricsEndpoints": []any{
				map[string]any{"port": "metrics", "path": "/metrics"},
				map[string]any{"port": "devtools", "path": "/metrics"},
			},
		},
	}}
	u.SetGroupVersionKind(PodMonitorGVK)
	u.SetOwnerReferences(m.OwnerReferences)
	return u
}

// Ingress publishes the API's Service at spec.ingress.host; nil without
// spec.ingress.
func Ingress(s *shutterv1.ScreenshotService) *networkingv1.Ingress {
	in := s.Spec.Ingress
	if in == nil {
		return nil
	}
	prefix := networkingv1.PathTypePrefix
	m := meta(s, ServiceName(s), "api")
	m.Annotations = in.Annotations
	ing := &networkingv1.Ingress{
		ObjectMeta: m,
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: in.Host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: ServiceName(s), Port: networkingv1.ServiceBackendPort{Number: port(s)}},
				}}},
			}}}},
		},
	}
	if in.ClassName != "" {
		ing.Spec.IngressClassName = &in.ClassName
	}
	if in.TLSSecretName != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{in.Host}, SecretName: in.TLSSecretName}}
	}
	return ing
}

// spread is the pods' topology spread: the spec's own, else over nodes and
// zones as far as the scheduler can (never blocking a pod).
func spread(s *shutterv1.ScreenshotService, component string, own []corev1.TopologySpreadConstraint) []corev1.TopologySpreadConstraint {
	if len(own) > 0 {
		return own
	}
	var out []corev1.TopologySpreadConstraint
	for _, key := range []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"} {
		out = append(out, corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: selector(s, component)}})
	}
	return out
}

func orMap[K comparable, V any](v, def map[K]V) map[K]V {
	if len(v) > 0 {
		return v
	}
	return def
}

func orSlice[T any](v, def []T) []T {
	if len(v) > 0 {
		return v
	}
	return def
}

func orPtr[T any](v, def *T) *T {
	if v != nil {
		return v
	}
	return def
}

// PodDisruptionBudgets keep all but one pod of each component through
// voluntary disruptions.
func PodDisruptionBudgets(s *shutterv1.ScreenshotService) []*policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	var out []*policyv1.PodDisruptionBudget
	for _, c := range []struct{ name, component string }{{APIName(s), "api"}, {BrowserName(s), "browser"}} {
		out = append(out, &policyv1.PodDisruptionBudget{
			ObjectMeta: meta(s, c.name, c.component),
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: &one,
				Selector:       &metav1.LabelSelector{MatchLabels: selector(s, c.component)},
			},
		})
	}
	return out
}

func orDefault[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}
