package testenv

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// S3Version is the S3-compatible server the tests run (Versity's gateway on
// a POSIX directory). The Makefile builds it into the tool cache.
const S3Version = "v1.8.0"

// S3 is a throwaway S3-compatible server on a loopback port.
type S3 struct {
	Port                 int
	AccessKey, SecretKey string
	dir, bin             string
	cmd                  *exec.Cmd
}

func s3Bin() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "shutter", "versitygw-"+S3Version, "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", errors.New("no S3 server: run make test-deps (builds versitygw " + S3Version + " into " + filepath.Dir(p) + ")")
}

// NewS3 starts a server of its own; it is stopped when the test ends.
func NewS3(tb testing.TB) *S3 {
	tb.Helper()
	bin, err := s3Bin()
	if err != nil {
		Missing(tb, "S3 server", err)
	}
	dir, err := os.MkdirTemp("", "shutter-s3-")
	if err != nil {
		tb.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	s := &S3{Port: port, AccessKey: "shutteraccess", SecretKey: "shuttersecret1234", dir: dir, bin: bin}
	if err := s.Start(); err != nil {
		os.RemoveAll(dir)
		Missing(tb, "S3 server", err)
	}
	tb.Cleanup(func() { s.Stop(); os.RemoveAll(dir) })
	return s
}

// Start starts the server (again) and waits until it answers.
func (s *S3) Start() error {
	s.cmd = exec.Command(s.bin, "--port", "127.0.0.1:"+strconv.Itoa(s.Port), "--quiet", "posix", s.dir)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(s.URL())
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("S3 server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server.
func (s *S3) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// URL is the endpoint.
func (s *S3) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.Port) }
