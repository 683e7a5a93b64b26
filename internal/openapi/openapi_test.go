package openapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/shutterhq/shutter/internal/screenshot"
)

func load(t *testing.T) (libopenapi.Document, validator.Validator) {
	t.Helper()
	doc, err := libopenapi.NewDocument(Document(screenshot.Params(screenshot.DefaultLimits)))
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return doc, v
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc, v := load(t)
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("%s: %s", e.Message, e.Reason)
		}
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	if m.Model.Version != "3.1.0" || m.Model.Info.Version != "1.0.0" {
		t.Errorf("openapi %s, info.version %s", m.Model.Version, m.Model.Info.Version)
	}
	for _, p := range []string{"/v1/screenshots/take", "/health", "/health/ready", "/health/live", "/openapi"} {
		if _, ok := m.Model.Paths.PathItems.Get(p); !ok {
			t.Errorf("path %s missing", p)
		}
	}
}

// TestParametersMatchTheParser compares every parameter of the document with
// the parser's table, field by field.
func TestParametersMatchTheParser(t *testing.T) {
	doc, _ := load(t)
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	item, _ := m.Model.Paths.PathItems.Get("/v1/screenshots/take")
	byName := map[string]bool{}
	table := screenshot.Params(screenshot.DefaultLimits)
	for _, dp := range item.Get.Parameters {
		if dp.Reference != "" || dp.Name == "" {
			dp, _ = m.Model.Components.Parameters.Get("api_key")
		}
		if dp.In == "header" || dp.Name == "signature" {
			continue // If-None-Match, signature: not options of the screenshot
		}
		byName[dp.Name] = true
		i := slices.IndexFunc(table, func(p screenshot.Param) bool { return p.Name == dp.Name })
		if i < 0 {
			t.Errorf("document has %s, the parser does not", dp.Name)
			continue
		}
		p := table[i]
		s := dp.Schema.Schema()
		if p.Name != "api_key" && (len(s.Type) != 1 || s.Type[0] != string(p.Kind)) {
			t.Errorf("%s: type %v, parser %s", p.Name, s.Type, p.Kind)
		}
		if (dp.Required != nil && *dp.Required) != p.Required {
			t.Errorf("%s: required differs", p.Name)
		}
		if p.HasRange {
			if s.Minimum == nil || *s.Minimum != p.Minimum || s.Maximum == nil || *s.Maximum != p.Maximum {
				t.Errorf("%s: range %v..%v, parser %v..%v", p.Name, s.Minimum, s.Maximum, p.Minimum, p.Maximum)
			}
		}
		if p.MaxLength > 0 && (s.MaxLength == nil || *s.MaxLength != int64(p.MaxLength)) {
			t.Errorf("%s: maxLength %v, parser %d", p.Name, s.MaxLength, p.MaxLength)
		}
		if p.Default != nil && (s.Default == nil || s.Default.Value != fmt.Sprint(p.Default)) {
			t.Errorf("%s: default %v, parser %v", p.Name, s.Default, p.Default)
		}
		enum := s.Enum
		if p.Kind == screenshot.KindArray {
			enum = s.Items.A.Schema().Enum
		}
		var got []string
		for _, n := range enum {
			got = append(got, n.Value)
		}
		if !slices.Equal(got, p.Enum) {
			t.Errorf("%s: enum %v, parser %v", p.Name, got, p.Enum)
		}
	}
	for _, p := range table {
		if !byName[p.Name] {
			t.Errorf("parser has %s, the document does not", p.Name)
		}
	}
}

// TestValidatorAgreesAtTheEdges asks the document's validator and the parser
// about the same boundary values.
func TestValidatorAgreesAtTheEdges(t *testing.T) {
	_, v := load(t)
	parser := screenshot.NewParser(screenshot.DefaultLimits)
	for _, p := range screenshot.Params(screenshot.DefaultLimits) {
		var values []string
		switch p.Kind {
		case screenshot.KindInteger:
			lo, hi := int(p.Minimum), int(p.Maximum)
			values = []string{strconv.Itoa(lo - 1), strconv.Itoa(lo), strconv.Itoa(hi), strconv.Itoa(hi + 1)}
		case screenshot.KindNumber:
			values = []string{fmt.Sprint(p.Minimum - 0.1), fmt.Sprint(p.Minimum), fmt.Sprint(p.Maximum), fmt.Sprint(p.Maximum + 0.1)}
		case screenshot.KindBoolean:
			values = []string{"true", "false"}
		case screenshot.KindString:
			values = append(values, p.Enum...)
			if len(p.Enum) > 0 {
				values = append(values, "nope")
			}
		}
		for _, val := range values {
			q := url.Values{"api_key": {"k"}, "url": {"https://example.com"}}
			// Rules that tie parameters together are in the descriptions,
			// not in the schema: give each parameter the company it needs.
			for _, c := range []string{"clip_x", "clip_y", "clip_width", "clip_height"} {
				if strings.HasPrefix(p.Name, "clip_") && c != p.Name {
					q.Set(c, "10")
				}
			}
			if p.Name == "omit_background" {
				q.Set("format", "png")
			}
			q.Set(p.Name, val)
			_, _, perr := parser.Parse(q)
			req, _ := http.NewRequest(http.MethodGet, "/v1/screenshots/take?"+q.Encode(), nil)
			ok, verrs := v.ValidateHttpRequest(req)
			if ok != (perr == nil) {
				var msgs []string
				for _, e := range verrs {
					msgs = append(msgs, e.Message+": "+e.Reason)
				}
				t.Errorf("%s=%s: parser error %v, document valid %v (%s)", p.Name, val, perr, ok, strings.Join(msgs, "; "))
			}
		}
	}
}
