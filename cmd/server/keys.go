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
		return errors.New("keys: want create, list, update or revoke\n" + usage)
	}
	commands := map[string]func(context.Context, keysEnv, []string) error{
		"create": keysCreate, "update": keysUpdate, "list": keysList, "revoke": keysRevoke,
	}
	run, ok := commands[args[0]]
	if !ok {
		return fmt.Errorf("keys: unknown command %q\n%s", args[0], usage)
	}
	st, _, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	return run(ctx, keysEnv{store: st, cfg: cfg, out: stdout}, args[1:])
}

// keysEnv is what every keys subcommand works with.
type keysEnv struct {
	store store
	cfg   *config.Config
	out   io.Writer
}

func keysCreate(ctx context.Context, e keysEnv, args []string) error {
	var f keyFlags
	fs := f.set("keys create")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("keys create: %w\n%s", err, usage)
	}
	u, err := f.update(fs)
	if err != nil {
		return fmt.Errorf("keys create: %w", err)
	}
	r := keyRequest{plan: screenshot.PlanFree}
	k := &screenshot.Key{Plan: screenshot.PlanFree}
	u.Apply(k)
	r.name, r.plan, r.domains, r.rateLimit, r.monthlyQuota = k.Name, k.Plan, k.Domains, k.RateLimit, k.MonthlyQuota
	secret, k, err := createKey(ctx, e.store, e.cfg, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "created key %s (plan %s); the secret is shown only now:\n%s\n", k.ID, k.Plan, secret)
	return nil
}

func keysUpdate(ctx context.Context, e keysEnv, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("keys update: want a key ID first (see keys list)")
	}
	id := args[0]
	var f keyFlags
	fs := f.set("keys update")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("keys update: %w\n%s", err, usage)
	}
	u, err := f.update(fs)
	if err != nil {
		return fmt.Errorf("keys update: %w", err)
	}
	if err := e.store.UpdateKey(ctx, id, u); err != nil {
		return fmt.Errorf("keys update: %s", screenshot.ErrorMessage(err))
	}
	fmt.Fprintf(e.out, "updated %s\n", id)
	return nil
}

// keysList prints every key with this month's usage; never a secret.
func keysList(ctx context.Context, e keysEnv, _ []string) error {
	keys, err := e.store.ListKeys(ctx)
	if err != nil {
		return err
	}
	ps := plans(e.cfg.Plans)
	period, _ := screenshot.PeriodOf(time.Now())
	tw := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tNAME\tPREFIX\tPLAN\tRATE/WINDOW\tUSED %s\tDOMAINS\tCREATED\tSTATUS\n", period)
	for _, k := range keys {
		status := "active"
		if k.Revoked() {
			status = "revoked " + k.RevokedAt.Format(time.RFC3339)
		}
		used, err := e.store.Usage(ctx, k.ID, period)
		if err != nil {
			return err
		}
		l := ps.For(k)
		quota := "unlimited"
		if l.Quota > 0 {
			quota = fmt.Sprint(l.Quota)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.Plan, l.Rate,
			used, quota, strings.Join(k.Domains, ","), k.CreatedAt.Format(time.RFC3339), status)
	}
	return tw.Flush()
}

func keysRevoke(ctx context.Context, e keysEnv, args []string) error {
	if len(args) != 1 {
		return errors.New("keys revoke: want one key ID (see keys list)")
	}
	if err := e.store.RevokeKey(ctx, args[0]); err != nil {
		return fmt.Errorf("keys revoke: %s", screenshot.ErrorMessage(err))
	}
	fmt.Fprintf(e.out, "revoked %s\n", args[0])
	return nil
}

// keyFlags are the flags of keys create and keys update.
type keyFlags struct {
	name, plan, domains string
	rate, quota         int
}

func (f *keyFlags) set(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.name, "name", "", "a name for people")
	fs.StringVar(&f.plan, "plan", "free", "free, pro or enterprise")
	fs.StringVar(&f.domains, "domains", "", "comma-separated allowed domains (example.com, *.example.org); empty: any")
	fs.IntVar(&f.rate, "rate-limit", 0, "requests per window (0: the plan's)")
	fs.IntVar(&f.quota, "monthly-quota", 0, "screenshots per month (0: the plan's)")
	return fs
}

// update turns the flags that were given into a key update.
func (f *keyFlags) update(fs *flag.FlagSet) (screenshot.KeyUpdate, error) {
	var u screenshot.KeyUpdate
	var err error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "name":
			u.Name = &f.name
		case "plan":
			p, perr := screenshot.ParsePlan(f.plan)
			if perr != nil {
				err = errors.New(screenshot.ErrorMessage(perr))
			}
			u.Plan = &p
		case "domains":
			ds := []string{}
			for d := range strings.SplitSeq(f.domains, ",") {
				if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
					if derr := screenshot.ValidDomain(d); derr != nil {
						err = derr
					}
					ds = append(ds, d)
				}
			}
			u.Domains = &ds
		case "rate-limit":
			if f.rate < 0 {
				err = errors.New("--rate-limit must not be negative")
			}
			u.RateLimit = &f.rate
		case "monthly-quota":
			if f.quota < 0 {
				err = errors.New("--monthly-quota must not be negative")
			}
			u.MonthlyQuota = &f.quota
		}
	})
	return u, err
}
