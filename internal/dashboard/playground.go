package dashboard

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// field is one parameter of the playground form.
type field struct {
	screenshot.Param
	Value   string
	Default string
	Input   string // text, number, select, textarea, bool
	Options []string
}

type group struct {
	Name   string
	Fields []field
}

type playgroundData struct {
	Groups []group
	APIKey string
	Result *result
}

// result is what the API answered, shown as it answered.
type result struct {
	Status      int
	ContentType string
	Image       template.URL // a data: URL of the image
	IsPDF       bool
	Error       string // the JSON error body
	Src         string // the exact <img src>
	Curl        string
	Signed      bool
	Query       string
	Bytes       int
}

func (d *Dashboard) fields(form url.Values) []group {
	var groups []group
	index := map[string]int{}
	for _, p := range d.Params {
		if p.Name == "api_key" {
			continue
		}
		f := field{Param: p, Value: form.Get(p.Name), Input: "text"}
		if p.Default != nil {
			f.Default = fmt.Sprint(p.Default)
		}
		switch {
		case p.Kind == screenshot.KindBoolean:
			f.Input, f.Options = "select", []string{"true", "false"}
		case len(p.Enum) > 0 && p.Kind == screenshot.KindString:
			f.Input, f.Options = "select", p.Enum
		case p.Kind == screenshot.KindInteger || p.Kind == screenshot.KindNumber:
			f.Input = "number"
		case p.List:
			f.Input = "textarea"
		}
		if p.Name == "url" && f.Value == "" {
			f.Value = ""
		}
		i, ok := index[p.Group]
		if !ok {
			i = len(groups)
			index[p.Group] = i
			name := p.Group
			if name != "" {
				name = strings.ToUpper(name[:1]) + name[1:]
			}
			groups = append(groups, group{Name: name})
		}
		groups[i].Fields = append(groups[i].Fields, f)
	}
	return groups
}

func (d *Dashboard) playgroundPage(v *visit) error {
	return d.render(v, "playground", page{Title: "Playground", Nav: "playground", Data: playgroundData{Groups: d.fields(url.Values{})}})
}

// playground takes the screenshot through the API itself, with the key
// the visitor pasted (one of theirs), and shows the answer beside the URL
// that would produce it. The key travels in the form body, never in a URL
// the dashboard builds.
func (d *Dashboard) playground(v *visit) error {
	if err := v.r.ParseForm(); err != nil {
		return screenshot.Errorf(screenshot.EINVALID, "the form could not be read")
	}
	form := v.r.PostForm
	secret := strings.TrimSpace(form.Get("api_key"))
	data := playgroundData{Groups: d.fields(form), APIKey: secret}
	pg := page{Title: "Playground", Nav: "playground", Data: &data}
	if secret == "" {
		pg.Error, pg.Status = "Paste one of your API keys.", 422
		return d.render(v, "playground", pg)
	}
	var key *screenshot.Key
	if k, err := d.Accounts.Keys.KeyByHash(v.r.Context(), screenshot.HashSecret(secret)); err == nil {
		if !account.CanSee(v.user, k) {
			pg.Error, pg.Status = "This API key is not one of yours.", 403
			return d.render(v, "playground", pg)
		}
		key = k
	}
	// The query in the table's order, only the fields that were filled.
	parts := []string{"api_key=" + url.QueryEscape(secret)}
	for _, p := range d.Params {
		if p.Name == "api_key" {
			continue
		}
		val := strings.TrimSpace(form.Get(p.Name))
		if p.List {
			val = strings.ReplaceAll(val, "\r\n", "\n")
		}
		if val != "" {
			parts = append(parts, p.Name+"="+url.QueryEscape(val))
		}
	}
	raw := strings.Join(parts, "&")
	res := &result{Query: raw}
	if key != nil && (key.RequireSignature || form.Get("sign") == "on") {
		signing, err := d.Accounts.SigningSecret(v.r.Context(), key)
		if err != nil {
			return err
		}
		raw += "&signature=" + account.Sign(signing, raw)
		res.Signed = true
	}
	res.Src = d.base(v.r) + "/v1/screenshots/take?" + raw
	res.Curl = "curl -o screenshot '" + strings.ReplaceAll(res.Src, "'", "'\\''") + "'"
	if err := d.take(v.r, raw, res); err != nil {
		return err
	}
	data.Result = res
	return d.render(v, "playground", pg)
}

// take sends the query to the API as a request of its own and keeps the
// answer in res: the image as a data: URL, or the error as the API wrote it.
func (d *Dashboard) take(r *http.Request, raw string, res *result) error {
	rec := &recorder{header: http.Header{}}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "/v1/screenshots/take?"+raw, nil)
	if err != nil {
		return err
	}
	req.RemoteAddr, req.Host = r.RemoteAddr, r.Host
	d.API.ServeHTTP(rec, req)
	res.Status, res.ContentType, res.Bytes = rec.status, rec.header.Get("Content-Type"), rec.body.Len()
	switch {
	case rec.status == http.StatusOK && strings.HasPrefix(res.ContentType, "image/"):
		res.Image = template.URL("data:" + res.ContentType + ";base64," + base64.StdEncoding.EncodeToString(rec.body.Bytes())) //nolint:gosec // our own image bytes, base64
	case rec.status == http.StatusOK:
		res.IsPDF = true
	default:
		res.Error = rec.body.String()
	}
	return nil
}

// recorder keeps the API's answer to the playground's request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
