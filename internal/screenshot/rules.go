package screenshot

import (
	"net/url"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time_zone is checked against the IANA database even where the system has none
)

// A rule ties parameters together. It sees the parsed options and which
// parameters the query gave, and returns an EINVALID error that names every
// parameter involved.
type rule func(o *Options, given func(name string) bool, l Limits) error

// rules run after every parameter has been parsed on its own.
var rules = []rule{
	clipComplete,
	exclusive("clip_x", "selector"),
	exclusive("full_page", "selector"),
	func(o *Options, given func(string) bool, _ Limits) error {
		if o.OmitBackground && o.Format == JPEG {
			return Errorf(EINVALID, "parameter omit_background=true needs format png, webp or pdf: jpeg has no transparency")
		}
		return nil
	},
	func(o *Options, given func(string) bool, _ Limits) error {
		if o.Format != PDF {
			return nil
		}
		for _, name := range []string{"image_width", "image_height", "selector", "clip_x"} {
			if given(name) {
				return Errorf(EINVALID, "parameter %s does not apply to format=pdf: a PDF is the whole document", displayName(name))
			}
		}
		return nil
	},
	clipSize,
}

// checkRules runs every rule.
func checkRules(o *Options, q url.Values, l Limits) error {
	given := func(name string) bool {
		if name == "clip_x" { // stands for the four
			return o.Clip != nil
		}
		return slices.ContainsFunc(q[name], func(v string) bool { return v != "" })
	}
	for _, r := range rules {
		if err := r(o, given, l); err != nil {
			return err
		}
	}
	if o.MediaType == "" {
		o.MediaType = "screen"
		if o.Format == PDF {
			o.MediaType = "print"
		}
	}
	return nil
}

func displayName(name string) string {
	if name == "clip_x" {
		return "clip_x/clip_y/clip_width/clip_height"
	}
	return name
}

// exclusive refuses a query that gives both parameters. A boolean counts as
// given only when true.
func exclusive(a, b string) rule {
	return func(o *Options, given func(string) bool, _ Limits) error {
		on := func(name string) bool {
			if name == "full_page" {
				return o.FullPage
			}
			return given(name)
		}
		if on(a) && on(b) {
			return Errorf(EINVALID, "parameters %s and %s are exclusive: give one of them", displayName(a), displayName(b))
		}
		return nil
	}
}

var clipNames = []string{"clip_x", "clip_y", "clip_width", "clip_height"}

func clipComplete(o *Options, _ func(string) bool, _ Limits) error {
	if o.Clip == nil {
		return nil
	}
	var missing []string
	for i, v := range []int{o.Clip.X, o.Clip.Y, o.Clip.Width, o.Clip.Height} {
		if v < 0 {
			missing = append(missing, clipNames[i])
		}
	}
	if len(missing) > 0 {
		return Errorf(EINVALID, "parameters clip_x, clip_y, clip_width and clip_height go together: give all four or none (missing %s)",
			strings.Join(missing, ", "))
	}
	return nil
}

// clipSize keeps a clip within what one image may hold.
func clipSize(o *Options, _ func(string) bool, _ Limits) error {
	if o.Clip == nil {
		return nil
	}
	dsf := max(o.DeviceScaleFactor, 1)
	if float64(o.Clip.Width)*dsf > MaxCaptureSide || float64(o.Clip.Height)*dsf > MaxCaptureSide {
		return Errorf(EINVALID, "parameters clip_width and clip_height times device_scale_factor must be at most %d pixels", MaxCaptureSide)
	}
	return nil
}

// clip returns o's clip rectangle, creating it with every side unset (-1)
// for the first clip_* parameter.
func (o *Options) clip() *Rect {
	if o.Clip == nil {
		o.Clip = &Rect{X: -1, Y: -1, Width: -1, Height: -1}
	}
	return o.Clip
}

func applyTimeZone(o *Options, v value) error {
	// Local and the empty name mean "this machine's": not a zone a client
	// can mean.
	if v.s == "Local" || strings.ContainsAny(v.s, " \\") || strings.HasPrefix(v.s, "/") || strings.Contains(v.s, "..") {
		return Errorf(EINVALID, "parameter time_zone must be an IANA time zone name such as Europe/Berlin or UTC")
	}
	if _, err := time.LoadLocation(v.s); err != nil {
		return Errorf(EINVALID, "parameter time_zone: %q is not an IANA time zone name (such as Europe/Berlin or UTC)", clip(v.s, 64))
	}
	o.TimeZone = v.s
	return nil
}

// applyHideSelectors takes one selector per line. Whether a selector parses
// is decided by the browser, where a bad one is a 400 too.
func applyHideSelectors(o *Options, v value) error {
	for _, line := range lines(v.s) {
		if strings.ContainsAny(line, "{}") {
			return Errorf(EINVALID, "parameter hide_selectors: %q is not a selector (braces are not allowed)", clip(line, 64))
		}
		o.HideSelectors = append(o.HideSelectors, line)
	}
	return nil
}

func paperNames() []string {
	return []string{"a4", "letter", "legal", "tabloid", "ledger", "a0", "a1", "a2", "a3", "a5", "a6"}
}
