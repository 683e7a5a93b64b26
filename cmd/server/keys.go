package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/screenshot"
)

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
	accounts, err := newAccounts(cfg, st, nil)
	if err != nil {
		return err
	}
	return run(ctx, keysEnv{store: st, accounts: accounts, cfg: cfg, out: stdout}, args[1:])
}

// keysEnv is what every keys subcommand works with.
type keysEnv struct {
	store    store
	accounts *account.Service
	cfg      *config.Config
	out      io.Writer
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
	k := &screenshot.Key{Plan: screenshot.PlanFree}
	u.Apply(k)
	c, err := e.accounts.CreateKey(ctx, account.NewKey{Name: k.Name, Plan: k.Plan, Domains: k.Domains, RateLimit: k.RateLimit,
		MonthlyQuota: k.MonthlyQuota, RequireSignature: k.RequireSignature})
	if err != nil {
		return fmt.Errorf("keys create: %s", screenshot.ErrorMessage(err))
	}
	if f.json {
		return json.NewEncoder(e.out).Encode(map[string]any{"id": c.Key.ID, "key": c.Secret, "signingSecret": c.SigningSecret,
			"name": c.Key.Name, "plan": c.Key.Plan, "domains": c.Key.Domains, "rateLimit": c.Key.RateLimit,
			"monthlyQuota": c.Key.MonthlyQuota, "requireSignature": c.Key.RequireSignature})
	}
	// The key itself stays on the last line, for scripts.
	fmt.Fprintf(e.out, "created key %s (plan %s); its signing secret and the key are shown only now:\nsigning secret: %s\n%s\n",
		c.Key.ID, c.Key.Plan, c.SigningSecret, c.Secret)
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
	requireSignature    bool
	json                bool
}

func (f *keyFlags) set(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.name, "name", "", "a name for people")
	fs.StringVar(&f.plan, "plan", "free", "free, pro or enterprise")
	fs.StringVar(&f.domains, "domains", "", "comma-separated allowed domains (example.com, *.example.org); empty: any")
	fs.IntVar(&f.rate, "rate-limit", 0, "requests per window (0: the plan's)")
	fs.IntVar(&f.quota, "monthly-quota", 0, "screenshots per month (0: the plan's)")
	fs.BoolVar(&f.requireSignature, "require-signature", false, "refuse requests without a valid signature")
	if name == "keys create" {
		fs.BoolVar(&f.json, "json", false, "print the new key as one line of JSON")
	}
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
		case "require-signature":
			u.RequireSignature = &f.requireSignature
		case "monthly-quota":
			if f.quota < 0 {
				err = errors.New("--monthly-quota must not be negative")
			}
			u.MonthlyQuota = &f.quota
		}
	})
	return u, err
}
