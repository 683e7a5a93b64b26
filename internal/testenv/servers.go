package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// FreePort returns a free loopback TCP port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Postgres is a throwaway PostgreSQL cluster on a loopback port.
type Postgres struct {
	Port int
	dir  string
	bin  string
	cred *syscall.Credential
	cmd  *exec.Cmd
}

func pgBin() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return "", errors.New("no PostgreSQL server found (apt-get install postgresql-15, or set PG_BIN)")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// NewPostgres initialises and starts a cluster of its own; it is stopped and
// removed when the test ends. initdb refuses root, so as root the cluster
// runs as the postgres user.
func NewPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	p, err := startPostgres()
	if err != nil {
		Missing(tb, "PostgreSQL", err)
	}
	tb.Cleanup(p.Remove)
	return p
}

func startPostgres() (*Postgres, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "shutter-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if p.Port, err = FreePort(); err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

// Start starts the server (again) on its port and waits until it answers.
func (p *Postgres) Start() error {
	p.cmd = exec.Command(filepath.Join(p.bin, "postgres"), "-D", filepath.Join(p.dir, "data"), "-h", "127.0.0.1",
		"-p", strconv.Itoa(p.Port), "-k", p.dir, "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "synchronous_commit=off", "-c", "max_connections=200")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	logf, _ := os.Create(filepath.Join(p.dir, "postgres.log"))
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if p.cred != nil && logf != nil {
		os.Chown(logf.Name(), int(p.cred.Uid), int(p.cred.Gid))
	}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, p.DSN("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
			return fmt.Errorf("postgres did not start: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server quickly (like a crash of the database host).
func (p *Postgres) Stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGINT) // fast shutdown: disconnects clients
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// Remove stops the server and deletes its files.
func (p *Postgres) Remove() {
	p.Stop()
	os.RemoveAll(p.dir)
}

// DSN is the connection string of database db.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// NewDatabase creates an empty database and returns its connection string.
func (p *Postgres) NewDatabase(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("t%d_%d", time.Now().UnixNano(), dbCounter.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	return p.DSN(name)
}

var (
	sharedMu sync.Mutex
	sharedPG *Postgres
	sharedRD *Redis
)

// PostgresDB returns a fresh database on the package's shared cluster.
func PostgresDB(tb testing.TB) string {
	tb.Helper()
	sharedMu.Lock()
	if sharedPG == nil {
		p, err := startPostgres()
		if err != nil {
			sharedMu.Unlock()
			Missing(tb, "PostgreSQL", err)
			return ""
		}
		sharedPG = p
	}
	p := sharedPG
	sharedMu.Unlock()
	return p.NewDatabase(tb)
}

// Redis is a throwaway Redis server on a loopback port.
type Redis struct {
	Port int
	dir  string
	cmd  *exec.Cmd
}

// NewRedis starts a server of its own; it is stopped when the test ends.
func NewRedis(tb testing.TB) *Redis {
	tb.Helper()
	r, err := startRedis()
	if err != nil {
		Missing(tb, "Redis", err)
	}
	tb.Cleanup(r.Remove)
	return r
}

func startRedis() (*Redis, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, errors.New("no redis-server found (apt-get install redis-server)")
	}
	dir, err := os.MkdirTemp("", "shutter-redis-")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	r := &Redis{Port: port, dir: dir}
	return r, r.Start()
}

// Start starts the server (again) on its port and waits until it answers.
func (r *Redis) Start() error {
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(r.Port),
		"--save", "", "--appendonly", "no", "--dir", r.dir)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server.
func (r *Redis) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// Remove stops the server and deletes its files.
func (r *Redis) Remove() {
	r.Stop()
	os.RemoveAll(r.dir)
}

// Addr is host:port.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.Port) }

// RedisAddr returns the address of the package's shared Redis and a key
// prefix of the test's own.
func RedisAddr(tb testing.TB) (addr, prefix string) {
	tb.Helper()
	sharedMu.Lock()
	if sharedRD == nil {
		r, err := startRedis()
		if err != nil {
			sharedMu.Unlock()
			Missing(tb, "Redis", err)
			return "", ""
		}
		sharedRD = r
	}
	r := sharedRD
	sharedMu.Unlock()
	return r.Addr(), fmt.Sprintf("t%d_%d:", time.Now().UnixNano(), dbCounter.Add(1))
}

// StopShared stops the shared servers; call it from TestMain.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedPG != nil {
		sharedPG.Remove()
		sharedPG = nil
	}
	if sharedRD != nil {
		sharedRD.Remove()
		sharedRD = nil
	}
}

var dbCounter atomic.Int64
