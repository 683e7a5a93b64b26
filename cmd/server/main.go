// Command server is Shutter's API server and its administration commands:
//
//	server [serve]                 run the API (the default)
//	server keys create|list|update|revoke manage API keys
//	server users create|list|reset-password manage users
//	server migrate                 prepare the database and exit
//	server browser [chromium flags] supervise a browser for the API (browser pods)
//
// Settings come from the environment; see the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/logging"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "shutter:", err)
		os.Exit(1)
	}
}

// run is main without the process: tests call it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		m := &Main{Config: cfg, Log: log, Stderr: stderr}
		if err := m.Run(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		log.Info("shutting down", "delay", cfg.ShutdownDelay, "grace", cfg.ShutdownGrace)
		if err := m.Shutdown(); err != nil {
			return err
		}
		log.Info("stopped")
		return nil
	case "keys":
		return keysCommand(ctx, cfg, args, stdout)
	case "users":
		return usersCommand(ctx, cfg, args, stdin, stdout)
	case "browser":
		return browserCommand(ctx, cfg, args, log)
	case "migrate":
		st, backend, err := openStore(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s database is up to date\n", backend)
		return st.Close()
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		return errors.New("unknown command " + cmd + "\n" + usage)
	}
}

const usage = `usage:
  server [serve]
  server keys create --plan free|pro|enterprise [--name N] [--domains a.com,*.b.org] [--rate-limit N] [--monthly-quota N]
                     [--require-signature=true|false] [--json]
  server keys list
  server keys revoke ID
  server keys update ID [--plan P] [--name N] [--domains D] [--rate-limit N] [--monthly-quota N] [--require-signature=true|false]
  server users create --email E [--admin] [--password-stdin]
  server users reset-password --email E [--password-stdin]
  server users list
  server migrate
  server browser [chromium flags...]   (BROWSER_TOKEN, BROWSER_LISTEN, CHROME_PATH)`

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // config.Load allows the four names only
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return logging.New(slog.NewJSONHandler(w, opts))
	}
	return logging.New(slog.NewTextHandler(w, opts))
}
