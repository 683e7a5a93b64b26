package dashboard

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/httpapi"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// localNext keeps a post-sign-in destination inside the dashboard.
func localNext(p string) string {
	if !strings.HasPrefix(p, Prefix+"/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return Prefix + "/"
	}
	return p
}

type authForm struct {
	Email, Next, Signup string
	External            string
}

func (d *Dashboard) authData(v *visit) authForm {
	return authForm{Email: v.r.PostFormValue("email"), Next: localNext(v.r.FormValue("next")), Signup: string(d.Accounts.Signup), External: d.External}
}

func (d *Dashboard) signInPage(v *visit) error {
	return d.render(v, "signin", page{Title: "Sign in", Data: d.authData(v)})
}

func (d *Dashboard) signUpPage(v *visit) error {
	return d.render(v, "signup", page{Title: "Sign up", Data: d.authData(v)})
}

func (d *Dashboard) signIn(v *visit) error {
	_, token, err := d.Accounts.SignIn(v.r.Context(), v.r.PostFormValue("email"), v.r.PostFormValue("password"), httpapi.ClientAddr(v.r))
	if err != nil {
		return d.render(v, "signin", page{Title: "Sign in", Error: screenshot.ErrorMessage(err), Data: d.authData(v), Status: httpapi.Status(err)})
	}
	d.setSession(v.w, token)
	http.Redirect(v.w, v.r, localNext(v.r.PostFormValue("next")), http.StatusSeeOther)
	return nil
}

func (d *Dashboard) signUp(v *visit) error {
	if v.r.PostFormValue("password") != v.r.PostFormValue("password2") {
		return d.render(v, "signup", page{Title: "Sign up", Error: "The two passwords differ.", Data: d.authData(v), Status: 422})
	}
	_, token, err := d.Accounts.SignUp(v.r.Context(), v.r.PostFormValue("email"), v.r.PostFormValue("password"))
	if err != nil {
		return d.render(v, "signup", page{Title: "Sign up", Error: screenshot.ErrorMessage(err), Data: d.authData(v), Status: httpapi.Status(err)})
	}
	d.setSession(v.w, token)
	http.Redirect(v.w, v.r, Prefix+"/", http.StatusSeeOther)
	return nil
}

func (d *Dashboard) signOut(v *visit) error {
	if err := d.Accounts.SignOut(v.r.Context(), v.session); err != nil {
		return err
	}
	d.setSession(v.w, "")
	http.Redirect(v.w, v.r, Prefix+"/signin", http.StatusSeeOther)
	return nil
}

func (d *Dashboard) signOutEverywhere(v *visit) error {
	if err := d.Accounts.Store.DeleteUserSessions(v.r.Context(), v.user.ID); err != nil {
		return err
	}
	d.setSession(v.w, "")
	http.Redirect(v.w, v.r, Prefix+"/signin", http.StatusSeeOther)
	return nil
}

func (d *Dashboard) accountPage(v *visit) error {
	return d.render(v, "account", page{Title: "Account", Nav: "account"})
}

func (d *Dashboard) changePassword(v *visit) error {
	f := v.r.PostFormValue
	if f("new_password") != f("new_password2") {
		return d.render(v, "account", page{Title: "Account", Nav: "account", Error: "The two new passwords differ.", Status: 422})
	}
	if err := d.Accounts.ChangePassword(v.r.Context(), v.user, f("current_password"), f("new_password"), v.session); err != nil {
		return d.render(v, "account", page{Title: "Account", Nav: "account", Error: screenshot.ErrorMessage(err), Status: httpapi.Status(err)})
	}
	return v.back("/account", "password")
}

// keyRow is a key in the list, with this month's use.
type keyRow struct {
	*screenshot.Key
	Used, Quota, Rate int
	Percent           int
	Owner             string
}

func (d *Dashboard) keyRows(v *visit) ([]keyRow, error) {
	keys, err := d.Accounts.Keys.ListKeys(v.r.Context())
	if err != nil {
		return nil, err
	}
	owners := map[string]string{}
	if v.user.Role == account.RoleAdmin {
		if users, err := d.Accounts.Store.ListUsers(v.r.Context()); err == nil {
			for _, u := range users {
				owners[u.ID] = u.Email
			}
		}
	}
	period, _ := screenshot.PeriodOf(time.Now())
	var rows []keyRow
	for _, k := range keys {
		if !account.CanSee(v.user, k) {
			continue
		}
		l := d.Plans.For(k)
		row := keyRow{Key: k, Quota: l.Quota, Rate: l.Rate, Owner: owners[k.OwnerID]}
		if d.Quota != nil {
			row.Used, _ = d.Quota.Usage(v.r.Context(), k.ID, period)
		}
		if row.Quota > 0 {
			row.Percent = min(100, row.Used*100/row.Quota)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

type keysData struct {
	Keys    []keyRow
	Created *account.Created
	Period  string
}

func (d *Dashboard) keysPage(v *visit) error {
	rows, err := d.keyRows(v)
	if err != nil {
		return err
	}
	period, _ := screenshot.PeriodOf(time.Now())
	return d.render(v, "keys", page{Title: "API keys", Nav: "keys", Data: keysData{Keys: rows, Period: period}})
}

// splitDomains reads the domains field: one per line or comma-separated.
func splitDomains(s string) []string {
	var out []string
	for _, d := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' || r == ' ' }) {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, strings.ToLower(d))
		}
	}
	return out
}

func (d *Dashboard) createKey(v *visit) error {
	f := v.r.PostFormValue
	n := account.NewKey{Name: strings.TrimSpace(f("name")), Domains: splitDomains(f("domains")),
		RequireSignature: f("require_signature") == "on", OwnerID: v.user.ID}
	c, err := d.Accounts.CreateKey(v.r.Context(), n)
	if err != nil {
		rows, _ := d.keyRows(v)
		return d.render(v, "keys", page{Title: "API keys", Nav: "keys", Error: screenshot.ErrorMessage(err), Status: httpapi.Status(err),
			Data: keysData{Keys: rows}})
	}
	return d.render(v, "created", page{Title: "Key created", Nav: "keys", Data: c})
}

type keyData struct {
	Key           keyRow
	Domains       string
	SigningSecret string
	NewSecret     string
	GraceUntil    time.Time
	Admin         bool
	Plans         []string
	Users         []*account.User
}

func (d *Dashboard) keyDetail(v *visit, k *screenshot.Key) (keyData, error) {
	l := d.Plans.For(k)
	row := keyRow{Key: k, Quota: l.Quota, Rate: l.Rate}
	if d.Quota != nil {
		period, _ := screenshot.PeriodOf(time.Now())
		row.Used, _ = d.Quota.Usage(v.r.Context(), k.ID, period)
	}
	if row.Quota > 0 {
		row.Percent = min(100, row.Used*100/row.Quota)
	}
	data := keyData{Key: row, Domains: strings.Join(k.Domains, "\n"), Admin: v.user.Role == account.RoleAdmin,
		Plans: []string{"free", "pro", "enterprise"}}
	if data.Admin {
		data.Users, _ = d.Accounts.Store.ListUsers(v.r.Context())
	}
	return data, nil
}

func (d *Dashboard) keyPage(v *visit) error {
	k, err := d.visibleKey(v.r.Context(), v)
	if err != nil {
		return err
	}
	data, err := d.keyDetail(v, k)
	if err != nil {
		return err
	}
	return d.render(v, "key", page{Title: "Key " + k.Name, Nav: "keys", Data: data})
}

// updateKey saves the key form: name, domains, signing; for admins also
// plan, limits and owner.
func (d *Dashboard) updateKey(v *visit) error {
	k, err := d.visibleKey(v.r.Context(), v)
	if err != nil {
		return err
	}
	f := v.r.PostFormValue
	name, domains, sign := strings.TrimSpace(f("name")), splitDomains(f("domains")), f("require_signature") == "on"
	u := screenshot.KeyUpdate{Name: &name, Domains: &domains, RequireSignature: &sign}
	err = account.CheckDomains(domains)
	if err == nil && len(name) > 100 {
		err = screenshot.Errorf(screenshot.EUNPROCESSABLE, "name: at most 100 characters")
	}
	if err == nil && v.user.Role == account.RoleAdmin {
		err = adminFields(f, &u)
	}
	if err == nil && k.Revoked() {
		err = screenshot.Errorf(screenshot.ECONFLICT, "the key is revoked")
	}
	if err == nil {
		err = d.Accounts.Keys.UpdateKey(v.r.Context(), k.ID, u)
	}
	if err != nil {
		data, _ := d.keyDetail(v, k)
		data.Domains = f("domains")
		return d.render(v, "key", page{Title: "Key " + k.Name, Nav: "keys", Error: screenshot.ErrorMessage(err), Status: httpapi.Status(err), Data: data})
	}
	return v.back("/keys/"+k.ID, "updated")
}

func adminFields(f func(string) string, u *screenshot.KeyUpdate) error {
	p, err := screenshot.ParsePlan(f("plan"))
	if err != nil {
		return screenshot.Errorf(screenshot.EUNPROCESSABLE, "plan: must be free, pro or enterprise")
	}
	u.Plan = &p
	for name, dst := range map[string]**int{"rate_limit": &u.RateLimit, "monthly_quota": &u.MonthlyQuota} {
		n, err := strconv.Atoi(strings.TrimSpace(or(f(name), "0")))
		if err != nil || n < 0 {
			return screenshot.Errorf(screenshot.EUNPROCESSABLE, "%s: a whole number, 0 for the plan's", name)
		}
		*dst = &n
	}
	owner := f("owner")
	u.OwnerID = &owner
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (d *Dashboard) revealSigningSecret(v *visit) error {
	k, err := d.visibleKey(v.r.Context(), v)
	if err != nil {
		return err
	}
	data, _ := d.keyDetail(v, k)
	if data.SigningSecret, err = d.Accounts.SigningSecret(v.r.Context(), k); err != nil {
		return err
	}
	return d.render(v, "key", page{Title: "Key " + k.Name, Nav: "keys", Data: data})
}

func (d *Dashboard) rotateSigningSecret(v *visit) error {
	k, err := d.visibleKey(v.r.Context(), v)
	if err != nil {
		return err
	}
	data, _ := d.keyDetail(v, k)
	if data.SigningSecret, err = d.Accounts.RotateSigningSecret(v.r.Context(), k); err != nil {
		return err
	}
	return d.render(v, "key", page{Title: "Key " + k.Name, Nav: "keys", Data: data,
		Notice: "A new signing secret was made. URLs signed with the old one no longer work."})
}

func (d *Dashboard) rotateKey(v *visit) error {
	k, err := d.visibleKey(v.r.Context(), v)
	if err != nil {
		return err
	}
	if k.Revoked() {
		return screenshot.Errorf(screenshot.ECONFLICT, "the key is revoked")
	}
	secret, until, err := d.Accounts.RotateKey(v.r.Context(), k)
	if err != nil {
		return err
	}
	if k, err = d.Accounts.Keys.KeyByID(v.r.Context(), k.ID); err != nil {
		return err
	}
	data, _ := d.keyDetail(v, k)
	data.NewSecret, data.GraceUntil = secret, until
	return d.render(v, "key", page{Title: "Key " + k.Name, Nav: "keys", Data: data})
}

func (d *Dashboard) revokePage(v *visit) error {
	k, err := d.visibleKey(v.r.Context(), v)
	if err != nil {
		return err
	}
	return d.render(v, "revoke", page{Title: "Revoke " + k.Name, Nav: "keys", Data: k})
}

func (d *Dashboard) revokeKey(v *visit) error {
	k, err := d.visibleKey(v.r.Context(), v)
	if err != nil {
		return err
	}
	if err := d.Accounts.Keys.RevokeKey(v.r.Context(), k.ID); err != nil {
		return err
	}
	return v.back("/keys/"+k.ID, "revoked")
}

type tokensData struct {
	Tokens  []*account.Token
	Created string
}

func (d *Dashboard) tokensPage(v *visit) error {
	ts, err := d.Accounts.Store.ListTokens(v.r.Context(), v.user.ID)
	if err != nil {
		return err
	}
	return d.render(v, "tokens", page{Title: "Access tokens", Nav: "tokens", Data: tokensData{Tokens: ts}})
}

func (d *Dashboard) createToken(v *visit) error {
	var exp time.Time
	if days, err := strconv.Atoi(v.r.PostFormValue("expires_days")); err == nil && days > 0 {
		exp = time.Now().AddDate(0, 0, days)
	}
	secret, _, err := d.Accounts.CreateToken(v.r.Context(), v.user, strings.TrimSpace(v.r.PostFormValue("name")), exp)
	ts, _ := d.Accounts.Store.ListTokens(v.r.Context(), v.user.ID)
	if err != nil {
		return d.render(v, "tokens", page{Title: "Access tokens", Nav: "tokens", Error: screenshot.ErrorMessage(err), Status: httpapi.Status(err),
			Data: tokensData{Tokens: ts}})
	}
	return d.render(v, "tokens", page{Title: "Access tokens", Nav: "tokens", Data: tokensData{Tokens: ts, Created: secret}})
}

func (d *Dashboard) deleteToken(v *visit) error {
	if err := d.Accounts.Store.DeleteToken(v.r.Context(), v.user.ID, v.p.ByName("id")); err != nil {
		return err
	}
	return v.back("/tokens", "token")
}

func (d *Dashboard) usersPage(v *visit) error {
	us, err := d.Accounts.Store.ListUsers(v.r.Context())
	if err != nil {
		return err
	}
	return d.render(v, "users", page{Title: "Users", Nav: "users", Data: us})
}

func (d *Dashboard) inviteUser(v *visit) error {
	role, err := account.ParseRole(v.r.PostFormValue("role"), "")
	if err == nil {
		_, err = d.Accounts.Invite(v.r.Context(), v.r.PostFormValue("email"), role)
	}
	if err != nil {
		us, _ := d.Accounts.Store.ListUsers(v.r.Context())
		return d.render(v, "users", page{Title: "Users", Nav: "users", Error: screenshot.ErrorMessage(err), Status: httpapi.Status(err), Data: us})
	}
	return v.back("/admin/users", "invited")
}

func (d *Dashboard) updateUser(v *visit) error {
	id := v.p.ByName("id")
	role, err := account.ParseRole(v.r.PostFormValue("role"), "")
	if err != nil {
		return err
	}
	disabled := v.r.PostFormValue("disabled") == "on"
	if err := d.Accounts.ChangeUser(v.r.Context(), v.user, id, account.UserUpdate{Role: &role, Disabled: &disabled}); err != nil {
		return err
	}
	return v.back("/admin/users", "user")
}

func (d *Dashboard) healthPage(v *visit) error {
	if d.Health == nil {
		return screenshot.Errorf(screenshot.ENOTFOUND, "no health checks on this server")
	}
	return d.render(v, "health", page{Title: "Health", Nav: "health", Data: d.Health.Run(v.r.Context())})
}
