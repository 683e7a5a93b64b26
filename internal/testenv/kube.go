package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// KubeVersion is the kube-apiserver (and etcd beside it) that envtest runs.
// The Makefile builds both from the Go module proxy into the tool cache.
const KubeVersion = "1.37.1"

// KubeAssets returns the directory holding kube-apiserver and etcd:
// KUBEBUILDER_ASSETS, else the tool cache.
func KubeAssets(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "shutter", "k8s-"+KubeVersion)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			Missing(tb, "envtest binaries", errors.New(bin+" not in "+dir+" (run make test-deps)"))
		}
	}
	return dir
}
