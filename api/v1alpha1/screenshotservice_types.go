package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a ScreenshotService.
const (
	// ConditionReady is true when the API and at least one browser serve.
	ConditionReady = "Ready"
	// ConditionProgressing is true while a rollout is under way.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is true when something needs attention.
	ConditionDegraded = "Degraded"
)

// Condition reasons, CamelCase.
const (
	ReasonAvailable           = "Available"
	ReasonAPIUnavailable      = "APIUnavailable"
	ReasonBrowsersUnavailable = "BrowsersUnavailable"
	ReasonRollingOut          = "RollingOut"
	ReasonRolledOut           = "RolledOut"
	ReasonAsExpected          = "AsExpected"
	ReasonReplicasMissing     = "ReplicasMissing"
	ReasonSecretMissing       = "SecretMissing"
	ReasonReconcileFailed     = "ReconcileFailed"
)

// SecretKeyRef names one key of a Secret in the namespace of the
// ScreenshotService.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// PlanSpec are the figures of one plan.
type PlanSpec struct {
	// Requests per rate-limit window.
	// +kubebuilder:validation:Minimum=1
	// +optional
	RequestsPerWindow *int32 `json:"requestsPerWindow,omitempty"`
	// Screenshots per calendar month; 0 is unlimited.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ScreenshotsPerMonth *int32 `json:"screenshotsPerMonth,omitempty"`
}

// Plans are the plan figures; unset figures keep the server's defaults
// (free 10/min and 100/month, pro 60/min and 1000/month, enterprise 100/min
// and unlimited).
type Plans struct {
	// +optional
	Free PlanSpec `json:"free,omitempty"`
	// +optional
	Pro PlanSpec `json:"pro,omitempty"`
	// Enterprise holds the defaults of enterprise keys without figures of
	// their own.
	// +optional
	Enterprise PlanSpec `json:"enterprise,omitempty"`
}

// BrowserSpec describes the headless Chromium pods.
type BrowserSpec struct {
	// Number of browser pods.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Image of the browser (Debian's chromium-headless-shell under an init
	// process). Empty: the operator's own release of it (status.images).
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Extra command-line flags for Chromium.
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// Size of the memory-backed /dev/shm.
	// +kubebuilder:default="1Gi"
	// +optional
	ShmSize *resource.Quantity `json:"shmSize,omitempty"`

	// Scheduling of the browser pods, apart from the API's (browsers
	// often go to nodes of their own).
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Spread of the browser pods; empty spreads them over nodes and zones
	// where the scheduler can (ScheduleAnyway).
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// AutoscalingSpec scales one pod kind with a HorizontalPodAutoscaler.
// +kubebuilder:validation:XValidation:rule="self.maxReplicas >= self.minReplicas",message="maxReplicas must not be below minReplicas"
// +kubebuilder:validation:XValidation:rule="has(self.targetCPUUtilization) || has(self.targetBusyPerPod)",message="set targetCPUUtilization, targetBusyPerPod or both"
type AutoscalingSpec struct {
	// +kubebuilder:validation:Minimum=1
	MinReplicas int32 `json:"minReplicas"`
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`
	// Average CPU use per pod, in percent of its request.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetCPUUtilization *int32 `json:"targetCPUUtilization,omitempty"`
	// Average busy render slots per pod: the API's shutter_queue_active,
	// the browsers' shutter_browser_busy_pages, served to the autoscaler by
	// a metrics adapter (see the README).
	// +optional
	TargetBusyPerPod *resource.Quantity `json:"targetBusyPerPod,omitempty"`
}

// AutoscalingSpecs are the autoscalers of the two pod kinds. While one is
// set, the operator leaves that Deployment's replicas to it.
type AutoscalingSpecs struct {
	// +optional
	API *AutoscalingSpec `json:"api,omitempty"`
	// +optional
	Browser *AutoscalingSpec `json:"browser,omitempty"`
}

// IngressSpec publishes the API through an Ingress.
type IngressSpec struct {
	// The IngressClass; empty uses the cluster's default.
	// +optional
	ClassName string `json:"className,omitempty"`
	// The host name clients use, such as shots.example.com.
	// +kubebuilder:validation:MinLength=1
	Host string `json:"host"`
	// A Secret of type kubernetes.io/tls for the host; empty serves plain
	// HTTP (behind a proxy that terminates TLS, say).
	// +optional
	TLSSecretName string `json:"tlsSecretName,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// MonitoringSpec is how Prometheus finds the pods.
type MonitoringSpec struct {
	// Make a PodMonitor (Prometheus Operator) for the API and browser pods'
	// metrics, when its CRD exists in the cluster.
	// +optional
	PodMonitor bool `json:"podMonitor,omitempty"`
	// Extra labels of the PodMonitor, for a Prometheus that selects by them.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// NetworkSpec narrows who may reach the pods.
type NetworkSpec struct {
	// Who may reach the API's HTTP port; empty admits everyone.
	// +optional
	APIFrom []networkingv1.NetworkPolicyPeer `json:"apiFrom,omitempty"`
	// Who may scrape the API's metrics port; empty admits the pods of the
	// namespace named "monitoring".
	// +optional
	MetricsFrom []networkingv1.NetworkPolicyPeer `json:"metricsFrom,omitempty"`
}

// DatabaseSpec points at PostgreSQL.
type DatabaseSpec struct {
	// The Secret key holding DATABASE_URL (postgres://…).
	URLSecretRef SecretKeyRef `json:"urlSecretRef"`
	// Connections per API pod.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxConnections *int32 `json:"maxConnections,omitempty"`
}

// RedisSpec points at Redis.
type RedisSpec struct {
	// The Secret key holding REDIS_URL (redis://…).
	URLSecretRef SecretKeyRef `json:"urlSecretRef"`
}

// StorageSpec is the S3-compatible cache store.
type StorageSpec struct {
	// +kubebuilder:validation:MinLength=3
	Bucket string `json:"bucket"`
	// Endpoint URL, such as https://s3.eu-central-1.amazonaws.com.
	// +kubebuilder:validation:Pattern=`^https?://`
	Endpoint string `json:"endpoint"`
	// +kubebuilder:default="auto"
	// +optional
	Region string `json:"region,omitempty"`
	// Path-style URLs, for most self-run stores.
	// +optional
	UsePathStyle bool `json:"usePathStyle,omitempty"`
	// The Secret holding the access key id and the secret access key.
	CredentialsSecretName string `json:"credentialsSecretName"`
	// +kubebuilder:default="accessKeyId"
	// +optional
	AccessKeyIDKey string `json:"accessKeyIdKey,omitempty"`
	// +kubebuilder:default="secretAccessKey"
	// +optional
	SecretAccessKeyKey string `json:"secretAccessKeyKey,omitempty"`
}

// ServiceSpec is the API's Service.
type ServiceSpec struct {
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
}

// ScreenshotServiceSpec is the desired Shutter platform.
// +kubebuilder:validation:XValidation:rule="!has(self.pageLoadTimeout) || duration(self.pageLoadTimeout) <= duration(self.screenshotTimeout)",message="pageLoadTimeout must not exceed screenshotTimeout"
type ScreenshotServiceSpec struct {
	// Number of API pods.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Image of the API server. Empty: the operator's own release of it
	// (status.images), so that an operator upgrade upgrades the platform.
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// Resources of each API pod.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Render slots per API pod (MAX_CONCURRENT_SCREENSHOTS).
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +optional
	MaxConcurrentScreenshots int32 `json:"maxConcurrentScreenshots,omitempty"`
	// Limit of one render (SCREENSHOT_TIMEOUT), 1s to 10m.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="screenshotTimeout must be between 1s and 10m"
	// +optional
	ScreenshotTimeout *metav1.Duration `json:"screenshotTimeout,omitempty"`
	// Limit of the page load (MAX_PAGE_LOAD_TIMEOUT); at most screenshotTimeout.
	// +optional
	PageLoadTimeout *metav1.Duration `json:"pageLoadTimeout,omitempty"`
	// Rate-limit window (RATE_LIMIT_WINDOW_MS).
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="rateLimitWindow must be between 1s and 24h"
	// +optional
	RateLimitWindow *metav1.Duration `json:"rateLimitWindow,omitempty"`
	// Plan figures.
	// +optional
	Plans Plans `json:"plans,omitempty"`
	// Allow loopback and private targets. Only for trusted users.
	// +optional
	AllowPrivateTargets bool `json:"allowPrivateTargets,omitempty"`
	// +kubebuilder:default=production
	// +kubebuilder:validation:Enum=development;production
	// +optional
	NodeEnv string `json:"nodeEnv,omitempty"`
	// +kubebuilder:default=info
	// +kubebuilder:validation:Enum=debug;info;warn;error
	// +optional
	LogLevel string `json:"logLevel,omitempty"`

	// Headless Chromium pods.
	// +optional
	Browser BrowserSpec `json:"browser,omitempty"`

	// PostgreSQL holding keys and usage; shared by every API pod.
	Database DatabaseSpec `json:"database"`
	// Redis for rate limits and cache-fill locks shared across API pods.
	// Without it each pod limits on its own.
	// +optional
	Redis *RedisSpec `json:"redis,omitempty"`
	// S3-compatible cache store. Without it each API pod caches in its own
	// emptyDir.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`

	// Extra environment of the API container; wins over the generated one,
	// except for the settings the operator owns: the ports and probes, the
	// browser discovery and proxy address, the data directory and the
	// generated secrets.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(e, !(e.name in ['PORT', 'METRICS_PORT', 'BROWSER_URLS', 'POD_IP', 'PROXY_HOST', 'DATA_DIR', 'AUTH_SECRET', 'BROWSER_TOKEN', 'BROWSER_TOKEN_PREVIOUS']))",message="spec.env may not set PORT, METRICS_PORT, BROWSER_URLS, POD_IP, PROXY_HOST, DATA_DIR, AUTH_SECRET, BROWSER_TOKEN or BROWSER_TOKEN_PREVIOUS: the operator owns them"
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	Service ServiceSpec `json:"service,omitempty"`

	// Horizontal autoscaling of the API and browser pods; replicas then
	// only seed a new Deployment.
	// +optional
	Autoscaling AutoscalingSpecs `json:"autoscaling,omitempty"`
	// Publishes the API at a host name; status.url then shows its address.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// Who may reach the API and its metrics.
	// +optional
	Network NetworkSpec `json:"network,omitempty"`
	// Scraping of the pods' metrics.
	// +optional
	Monitoring MonitoringSpec `json:"monitoring,omitempty"`

	// Scheduling of the API pods (and of the browser pods, unless
	// spec.browser has its own).
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Spread of the API pods; empty spreads them over nodes and zones
	// where the scheduler can (ScheduleAnyway).
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// Annotations of the API and browser pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
}

// ScreenshotServiceStatus is the observed state.
type ScreenshotServiceStatus struct {
	// The generation of the spec that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// API pods that exist now, as their Deployment observes them (the scale
	// subresource's status replicas).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// API pods asked for (spec.replicas, or an autoscaler's count).
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// Ready API pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Ready browser pods.
	// +optional
	BrowserReadyReplicas int32 `json:"browserReadyReplicas,omitempty"`
	// Label selector of the API pods (for the scale subresource).
	// +optional
	Selector string `json:"selector,omitempty"`
	// URL of the API: the external one when spec.ingress publishes it,
	// else the in-cluster one.
	// +optional
	URL string `json:"url,omitempty"`
	// In-cluster URL of the API.
	// +optional
	ClusterURL string `json:"clusterURL,omitempty"`
	// The images the pods run: the spec's, or the operator's release.
	// +optional
	Images Images `json:"images,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Images are the images of the two pod kinds.
type Images struct {
	// +optional
	Server string `json:"server,omitempty"`
	// +optional
	Browser string `json:"browser,omitempty"`
}

// ScreenshotService is one Shutter platform: API pods, browser pods and
// their wiring.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=shot;shots,categories=shutter
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="API",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Browsers",type=integer,JSONPath=`.status.browserReadyReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScreenshotService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ScreenshotServiceSpec   `json:"spec,omitempty"`
	Status ScreenshotServiceStatus `json:"status,omitempty"`
}

// ScreenshotServiceList is a list of ScreenshotServices.
// +kubebuilder:object:root=true
type ScreenshotServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScreenshotService `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ScreenshotService{}, &ScreenshotServiceList{})
}
