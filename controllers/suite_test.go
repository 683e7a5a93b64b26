package controllers

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
	"github.com/shutterhq/shutter/internal/manifests"
	"github.com/shutterhq/shutter/internal/testenv"
)

// cluster is the package's real kube-apiserver and etcd, with the operator
// running against it.
type cluster struct {
	env    *envtest.Environment
	cfg    *rest.Config
	client client.Client
	scheme *runtime.Scheme
	stop   context.CancelFunc
	done   chan struct{}
	// reconciler is the running operator's, for tests that play an
	// operator upgrade.
	reconciler *Reconciler
	// cache is the running operator's informer cache.
	cache cache.Cache
}

var (
	clusterOnce sync.Once
	shared      *cluster
	sharedErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stopManager()
		shared.env.Stop()
	}
	testenv.StopShared()
	os.Exit(code)
}

// kube returns the shared cluster, starting it (and the operator) on first use.
func kube(t *testing.T) *cluster {
	t.Helper()
	assets := testenv.KubeAssets(t)
	clusterOnce.Do(func() {
		w := io.Discard // SHUTTER_TEST_OPERATOR_LOGS=1 shows the operator's logs
		if os.Getenv("SHUTTER_TEST_OPERATOR_LOGS") != "" {
			w = os.Stderr
		}
		logf.SetLogger(zap.New(zap.WriteTo(w)))
		c := &cluster{env: &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
			ErrorIfCRDPathMissing: true,
			BinaryAssetsDirectory: assets,
		}}
		c.cfg, sharedErr = c.env.Start()
		if sharedErr != nil {
			return
		}
		c.scheme = runtime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(c.scheme))
		utilruntime.Must(shutterv1.AddToScheme(c.scheme))
		c.client, sharedErr = client.New(c.cfg, client.Options{Scheme: c.scheme})
		if sharedErr != nil {
			return
		}
		sharedErr = c.startManager()
		shared = c
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// startManager runs the operator as cmd/operator does, without leader
// election and listeners.
// operatorAccount is the ServiceAccount the test operator runs as, bound
// to the generated role (config/rbac/role.yaml) and nothing else: a
// permission the code needs and the role lacks fails the tests.
const operatorAccount = "system:serviceaccount:shutter-system:shutter-operator"

// grantOperatorRole creates the operator's ServiceAccount and binds the
// generated ClusterRole to it.
func (c *cluster) grantOperatorRole() error {
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		return err
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &role); err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shutter-system"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "shutter-operator", Namespace: "shutter-system"}},
		&role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shutter-operator"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "shutter-operator", Namespace: "shutter-system"}}},
	}
	for _, o := range objs {
		if err := c.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func (c *cluster) startManager() error {
	if err := c.grantOperatorRole(); err != nil {
		return err
	}
	// The operator runs as its ServiceAccount, with the generated role.
	cfg := rest.CopyConfig(c.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorAccount}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: c.scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: CacheOptions(""),
		// The restart test starts a second manager in the same process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		return err
	}
	r := &Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("shutter-operator")}
	r.SetImages(manifests.ReleaseImages("v0.1.0-test"))
	c.reconciler = r
	c.cache = mgr.GetCache()
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		if err := mgr.Start(ctx); err != nil {
			logf.Log.Error(err, "manager stopped")
		}
	}()
	return nil
}

func (c *cluster) stopManager() {
	c.stop()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
	}
}
