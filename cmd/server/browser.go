package main

import (
	"context"
	"log/slog"

	"github.com/shutterhq/shutter/internal/browserd"
	"github.com/shutterhq/shutter/internal/browserpath"
	"github.com/shutterhq/shutter/internal/config"
)

// browserCommand runs the browser supervisor of a browser pod until ctx
// ends (SIGTERM), then drains: no new sessions, the open ones finish.
func browserCommand(ctx context.Context, cfg *config.Config, flags []string, log *slog.Logger) error {
	exec, err := browserpath.Find(cfg.ChromePath)
	if err != nil {
		return err
	}
	tokens := []string{cfg.BrowserToken}
	if cfg.BrowserTokenPrevious != "" {
		tokens = append(tokens, cfg.BrowserTokenPrevious)
	}
	s, err := browserd.New(browserd.Config{ExecPath: exec, Flags: flags, Tokens: tokens, Listen: cfg.BrowserListen,
		DrainTimeout: cfg.ShutdownGrace}, log)
	if err != nil {
		return err
	}
	bctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := s.Start(bctx); err != nil {
		return err
	}
	log.Info("browser supervisor listening", "addr", s.Addr)
	<-ctx.Done()
	log.Info("draining")
	s.Drain()
	return nil
}
