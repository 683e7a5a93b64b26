package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/screenshot"
)

type keyRequest struct {
	name         string
	plan         screenshot.Plan
	domains      []string
	rateLimit    int
	monthlyQuota int
}

// createKey makes a key and stores its hash; it returns the secret, which
// exists nowhere else afterwards.
func createKey(ctx context.Context, ks screenshot.KeyStore, cfg *config.Config, r keyRequest) (string, *screenshot.Key, error) {
	secret := screenshot.NewSecret(cfg.APIKeyPrefix, cfg.NodeEnv)
	k := &screenshot.Key{
		ID: screenshot.NewKeyID(), Name: r.name, Prefix: screenshot.DisplayPrefix(secret),
		Hash: screenshot.HashSecret(secret), Plan: r.plan, Domains: r.domains,
		RateLimit: r.rateLimit, MonthlyQuota: r.monthlyQuota, CreatedAt: time.Now().UTC(),
	}
	if err := ks.CreateKey(ctx, k); err != nil {
		return "", nil, err
	}
	return secret, k, nil
}

func keysCommand(ctx context.Context, cfg *config.Config, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("keys: want create, list or revoke\n" + usage)
	}
	st, err := openStore(cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub, args := args[0], args[1:]; sub {
	case "create":
		fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		name := fs.String("name", "", "a name for people")
		plan := fs.String("plan", "free", "free, pro or enterprise")
		domains := fs.String("domains", "", "comma-separated allowed domains")
		rate := fs.Int("rate-limit", 0, "requests per window (0: the plan's)")
		quota := fs.Int("monthly-quota", 0, "screenshots per month (0: the plan's)")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("keys create: %w\n%s", err, usage)
		}
		p, err := screenshot.ParsePlan(*plan)
		if err != nil {
			return fmt.Errorf("keys create: %s", screenshot.ErrorMessage(err))
		}
		if *rate < 0 || *quota < 0 {
			return errors.New("keys create: --rate-limit and --monthly-quota must not be negative")
		}
		var ds []string
		for d := range strings.SplitSeq(*domains, ",") {
			if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
				ds = append(ds, d)
			}
		}
		secret, k, err := createKey(ctx, st, cfg, keyRequest{name: *name, plan: p, domains: ds, rateLimit: *rate, monthlyQuota: *quota})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created key %s (plan %s); the secret is shown only now:\n%s\n", k.ID, k.Plan, secret)
		return nil
	case "list":
		keys, err := st.ListKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tPLAN\tDOMAINS\tCREATED\tSTATUS")
		for _, k := range keys {
			status := "active"
			if k.Revoked() {
				status = "revoked " + k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.Plan,
				strings.Join(k.Domains, ","), k.CreatedAt.Format(time.RFC3339), status)
		}
		return tw.Flush()
	case "revoke":
		if len(args) != 1 {
			return errors.New("keys revoke: want one key ID (see keys list)")
		}
		if err := st.RevokeKey(ctx, args[0]); err != nil {
			return fmt.Errorf("keys revoke: %s", screenshot.ErrorMessage(err))
		}
		fmt.Fprintf(stdout, "revoked %s\n", args[0])
		return nil
	default:
		return fmt.Errorf("keys: unknown command %q\n%s", sub, usage)
	}
}
