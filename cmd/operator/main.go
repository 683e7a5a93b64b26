// Command operator runs the ScreenshotService controller: a controller-runtime
// manager with leader election, metrics and health endpoints.
//
// Flags (each also read from the environment variable in brackets):
//
//	--metrics-bind-address  [METRICS_BIND_ADDRESS]  default :8080; "0" turns metrics off
//	--health-probe-bind-address [HEALTH_PROBE_BIND_ADDRESS] default :8081
//	--leader-elect          [LEADER_ELECT]          default true
//	--leader-election-namespace [LEADER_ELECTION_NAMESPACE] default: the pod's namespace
//	--watch-namespace       [WATCH_NAMESPACE]       default: all namespaces
//	--zap-log-level etc.    the standard zap flags of controller-runtime
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
	"github.com/shutterhq/shutter/controllers"
	"github.com/shutterhq/shutter/internal/manifests"
	"github.com/shutterhq/shutter/internal/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shutter-operator:", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serviceAccountNamespace is where a pod finds its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultLeaderElect is LEADER_ELECT when set; otherwise on in a cluster
// and off elsewhere: run from a workstation with a kubeconfig there is no
// pod namespace to hold the lease, and one process needs no election.
func defaultLeaderElect(getenv func(string) string, exists func(string) bool) bool {
	if v, err := strconv.ParseBool(getenv("LEADER_ELECT")); err == nil {
		return v
	}
	return getenv("KUBERNETES_SERVICE_HOST") != "" && exists(serviceAccountNamespace)
}

func run() error {
	leaderDefault := defaultLeaderElect(os.Getenv, func(p string) bool { _, err := os.Stat(p); return err == nil })
	metricsAddr := flag.String("metrics-bind-address", env("METRICS_BIND_ADDRESS", ":8080"), "address of the metrics endpoint; 0 turns it off")
	probeAddr := flag.String("health-probe-bind-address", env("HEALTH_PROBE_BIND_ADDRESS", ":8081"), "address of /healthz and /readyz")
	leaderElect := flag.Bool("leader-elect", leaderDefault, "elect a leader, so that only one replica reconciles (default: in a cluster)")
	leaderNS := flag.String("leader-election-namespace", env("LEADER_ELECTION_NAMESPACE", ""), "namespace of the leader lease")
	watchNS := flag.String("watch-namespace", env("WATCH_NAMESPACE", ""), "only this namespace (default all)")
	imageTag := flag.String("image-tag", env("IMAGE_TAG", version.String()),
		"tag of the server and browser images for ScreenshotServices that name none (default: this operator's version)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(shutterv1.AddToScheme(scheme))

	mopts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:  *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "shutter-operator.shutter.dev",
		LeaderElectionNamespace: *leaderNS,
	}
	mopts.Cache = controllers.CacheOptions(*watchNS)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mopts)
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	r := &controllers.Reconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("shutter-operator"),
	}
	r.SetImages(manifests.ReleaseImages(*imageTag))
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("starting", "leader_elect", *leaderElect, "watch_namespace", *watchNS)
	return mgr.Start(ctrl.SetupSignalHandler())
}
