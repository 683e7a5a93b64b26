package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// authSecret is AUTH_SECRET, or in development without one a secret made
// once and kept in DATA_DIR/auth-secret, so that sealed signing secrets
// survive a restart of `make run`.
func authSecret(cfg *config.Config) (string, error) {
	if cfg.AuthSecret != "" {
		return cfg.AuthSecret, nil
	}
	if cfg.NodeEnv == "production" {
		return "", errors.New("AUTH_SECRET: required when NODE_ENV=production")
	}
	path := filepath.Join(cfg.DataDir, "auth-secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= config.MinAuthSecret {
		return strings.TrimSpace(string(b)), nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("development AUTH_SECRET: %w", err)
	}
	b := make([]byte, 32)
	rand.Read(b)
	secret := hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("development AUTH_SECRET: %w", err)
	}
	return secret, nil
}

// newAccounts is the account service on a store.
func newAccounts(cfg *config.Config, st store, limiter screenshot.Limiter) (*account.Service, error) {
	root, err := authSecret(cfg)
	if err != nil {
		return nil, err
	}
	return &account.Service{
		Store: st, Keys: st, Secrets: account.NewSecrets(root, cfg.AuthSecretPrevious),
		Signup: account.Signup(cfg.Signup), SessionTTL: cfg.SessionTTL, RotationGrace: cfg.KeyRotationGrace,
		KeyPrefix: cfg.APIKeyPrefix, NodeEnv: cfg.NodeEnv, Limiter: limiter,
	}, nil
}

func usersCommand(ctx context.Context, cfg *config.Config, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("users: want create, list or reset-password\n" + usage)
	}
	st, _, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	switch args[0] {
	case "list":
		return usersList(ctx, st, stdout)
	case "create", "reset-password":
	default:
		return fmt.Errorf("users: unknown command %q\n%s", args[0], usage)
	}
	fs := flag.NewFlagSet("users "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "the user's email")
	admin := fs.Bool("admin", false, "make the user an admin (create)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	if err := fs.Parse(args[1:]); err != nil || *email == "" {
		return fmt.Errorf("users %s: want --email\n%s", args[0], usage)
	}
	password, generated := "", false
	if *fromStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("users %s: no password on standard input", args[0])
		}
		password = strings.TrimRight(line, "\r\n")
	} else {
		b := make([]byte, 12)
		rand.Read(b)
		password, generated = hex.EncodeToString(b), true
	}
	if err := account.CheckPassword(password); err != nil {
		return fmt.Errorf("users %s: %w", args[0], err)
	}
	if args[0] == "create" {
		err = usersCreate(ctx, st, *email, password, *admin)
	} else {
		err = usersResetPassword(ctx, st, *email, password)
	}
	if err != nil {
		return fmt.Errorf("users %s: %s", args[0], screenshot.ErrorMessage(err))
	}
	fmt.Fprintf(stdout, "%s: %s\n", args[0], account.NormalizeEmail(*email))
	if generated {
		fmt.Fprintf(stdout, "password (shown only now): %s\n", password)
	}
	return nil
}

func usersCreate(ctx context.Context, st store, email, password string, admin bool) error {
	email = account.NormalizeEmail(email)
	if !account.ValidEmail(email) {
		return screenshot.Errorf(screenshot.EINVALID, "%q is not an email address", email)
	}
	role := account.RoleMember
	if admin {
		role = account.RoleAdmin
	}
	return st.CreateUser(ctx, &account.User{ID: account.NewID("usr"), Email: email, PasswordHash: account.HashPassword(password),
		Role: role, CreatedAt: time.Now().UTC()})
}

// usersResetPassword sets a new password, enables the user and ends every
// session.
func usersResetPassword(ctx context.Context, st store, email, password string) error {
	u, err := st.UserByEmail(ctx, email)
	if err != nil {
		return err
	}
	hash, enabled := account.HashPassword(password), false
	if err := st.UpdateUser(ctx, u.ID, account.UserUpdate{PasswordHash: &hash, Disabled: &enabled}); err != nil {
		return err
	}
	return st.DeleteUserSessions(ctx, u.ID)
}

func usersList(ctx context.Context, st store, stdout io.Writer) error {
	us, err := st.ListUsers(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tROLE\tSTATUS\tCREATED\tLAST SIGN-IN")
	for _, u := range us {
		status, last := "active", "never"
		if u.Disabled {
			status = "disabled"
		}
		if !u.LastSignInAt.IsZero() {
			last = u.LastSignInAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Role, status, u.CreatedAt.Format(time.RFC3339), last)
	}
	return tw.Flush()
}
